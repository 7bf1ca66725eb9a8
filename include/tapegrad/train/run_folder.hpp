// include/tapegrad/train/run_folder.hpp
//
// A run's folder, checked and locked before any training, so that a run never trains for an hour
// and then fails at its first save, never shares its folder with another run, and never replaces
// a better model than its own:
//
//   OUT/last.safetensors   the latest checkpoint, what --resume continues
//   OUT/best.safetensors   the checkpoint of the lowest validation loss so far, of this run or of
//                          an earlier one in the same folder: a run replaces it only with a lower
//                          loss, whether it was resumed or started from scratch
//
// The Trainer opens one itself (TrainerOptions::out); a program that prepares for long (reading
// a corpus, loading a model) opens it first and hands it over (Trainer::use_folder), so that a
// folder another run holds is refused before that work. Messages name the trainer's options by
// the flags a program gives them (--out, --resume).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "tapegrad/io/folder_lock.hpp"

namespace tapegrad::train {

class RunFolder {
 public:
  /// The names of the files a run writes into its folder besides its checkpoints: the trainer's
  /// loss.dat, val.dat, plots.gp and loss.png.
  static bool trainer_output(const std::string& name);

  /// Creates `out` if needed, locks it when `lock` (refused at once when another run holds it;
  /// under mpirun rank 0 alone writes, and locks), and checks that a checkpoint can be written
  /// into it and that what is there can be replaced: the checkpoints, and every file an earlier
  /// run left there that `is_output` names (a FIFO, a folder or a link to another kind of file
  /// where a picture goes is refused now, not after the training). ValueError or CheckpointError
  /// naming --out (or --resume) and saying why not. Reads the loss best.safetensors holds.
  RunFolder(const std::string& out, bool resume, bool lock,
            bool (*is_output)(const std::string& name) = trainer_output);

  std::filesystem::path dir, last, best;
  bool has_last = false;  ///< OUT/last.safetensors exists (a regular file)
  double best_on_disk;    ///< the validation loss best.safetensors holds, or infinity

 private:
  std::unique_ptr<io::FolderLock> lock_;  ///< held for the whole run
};

}  // namespace tapegrad::train
