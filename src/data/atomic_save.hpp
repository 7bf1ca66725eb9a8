// src/data/atomic_save.hpp: the files data writes (token files, BPE models) go through the
// library's one atomic writer (tapegrad/core/atomic_file.hpp), whose failures are CheckpointErrors
// of kind "IoError". For a data user a file that cannot be written is a DataError, as one that
// cannot be read is: as_data_error() rethrows the writer's error as a DataError with the same
// message (which names the caller, the file and the reason). Private to src/data.
#pragma once

#include "tapegrad/core/errors.hpp"

namespace tapegrad::data::detail {

/// Runs `write`; a CheckpointError it throws becomes a DataError with the same message.
template <class Write>
void as_data_error(const Write& write) {
  try {
    write();
  } catch (const CheckpointError& e) {
    throw DataError(e.what());
  }
}

}  // namespace tapegrad::data::detail
