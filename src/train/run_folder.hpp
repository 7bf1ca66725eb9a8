// src/train/run_folder.hpp (private to the library): the run's folder, checked and locked before
// any training, so that a run never trains for an hour and then fails at its first save, never
// shares its folder with another run, and never replaces a better model than its own.
//
//   OUT/last.safetensors   the latest checkpoint, what --resume continues
//   OUT/best.safetensors   the checkpoint of the lowest validation loss so far, of this run or of
//                          an earlier one in the same folder: a run replaces it only with a lower
//                          loss, whether it was resumed or started from scratch
//
// Messages name the trainer's options by the flags a program gives them (--out, --resume).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "tapegrad/io/folder_lock.hpp"

namespace tapegrad::train::detail {

struct RunFolder {
  std::filesystem::path dir, last, best;
  bool has_last = false;                 ///< OUT/last.safetensors exists (a regular file)
  std::unique_ptr<io::FolderLock> lock;  ///< held for the whole run
};

/// Creates `out` if needed, locks it when `lock` (refused at once when another run holds it: under
/// mpirun rank 0 alone writes, and locks), and checks that a checkpoint can be written into it and
/// that what is there can be replaced: ValueError or CheckpointError naming --out (or --resume)
/// and saying why not.
RunFolder prepare_run_folder(const std::string& out, bool resume, bool lock);

/// The validation loss OUT/best.safetensors holds (its note "best_val"), or infinity without one.
/// A best file whose loss cannot be read is a ValueError: the run would replace it unknowingly.
double best_val_on_disk(const std::filesystem::path& best);

}  // namespace tapegrad::train::detail
