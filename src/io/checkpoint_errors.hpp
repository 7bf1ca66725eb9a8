// src/io/checkpoint_errors.hpp (private to the library)
//
// How the checkpoint code words its failures. Every message starts with where it happened and
// which file, then says what was expected and what was found:
//     load_optimizer: 'optim.safetensors': InvalidCheckpoint: expected ..., got ...
//     save_safetensors: 'model.safetensors': cannot write: No space left on device
// Both are CheckpointError; `kind` is "InvalidCheckpoint" (the file does not hold what the caller
// asked for) or "IoError" (the system refused an open, read, write or rename).
#pragma once

#include <cstring>
#include <sstream>
#include <string>
#include <string_view>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::io {

inline std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

/// "function: 'source'", the start of every message about one file.
inline std::string where_in(std::string_view function, std::string_view source) {
  return std::string(function) + ": " + in_quotes(source);
}

/// Throws CheckpointError kind "InvalidCheckpoint": "where: InvalidCheckpoint: parts...".
template <class... Parts>
[[noreturn]] void invalid_checkpoint(const std::string& where, const Parts&... parts) {
  std::ostringstream os;
  os.precision(10);
  os << where << ": InvalidCheckpoint: ";
  (detail::append(os, parts), ...);
  throw CheckpointError(os.str(), "InvalidCheckpoint");
}

/// Throws CheckpointError kind "IoError": "where: 'path': what[: strerror(err)]" (err 0: none).
[[noreturn]] inline void io_error(std::string_view where, std::string_view path,
                                  std::string_view what, int err) {
  std::ostringstream os;
  os << where << ": " << in_quotes(path) << ": " << what;
  if (err != 0) os << ": " << std::strerror(err);
  throw CheckpointError(os.str(), "IoError");
}

}  // namespace tapegrad::io
