// examples/gpt/run_folder.hpp: the --out folder of a run, checked before any training, so that a
// run never trains for an hour and then fails at its first save, and never replaces a better
// model than its own.
//
//   OUT/last.safetensors   the latest checkpoint, what --resume continues
//   OUT/best.safetensors   the checkpoint of the lowest validation loss so far, of this run or of
//                          an earlier one in the same folder: a run replaces it only with a lower
//                          loss, whether it was resumed or started from scratch
//
// One run at a time: the folder is locked (io::FolderLock) before anything in it is read, and
// stays locked until the run ends, however it ends. A second run given the same --out is refused
// at once, naming the process that holds it; otherwise both would write last.safetensors and the
// worse run could replace the better best.safetensors.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "run_files.hpp"

namespace gpt {

struct RunFolder {
  std::filesystem::path dir, last, best;
  bool has_last = false;  // OUT/last.safetensors exists (a regular file)
  std::unique_ptr<tapegrad::io::FolderLock> lock;  // held for the whole run (null: not locked)
};

/// What is at `path` for a checkpoint that will be written there: nothing or a regular file
/// (through a link, as `cp` writes); anything else is a ValueError naming `flag` and the path.
inline bool usable_checkpoint_path(const std::filesystem::path& path, const std::string& flag) {
  namespace fs = std::filesystem;
  const fs::file_status link = fs::symlink_status(path);
  if (!fs::exists(link)) return false;
  std::error_code error;
  const fs::file_status target = fs::status(path, error);
  if (fs::is_symlink(link) && !fs::exists(target))
    throw tapegrad::ValueError(flag + ": '" + path.string() + "' is a symbolic link to '" +
                               fs::read_symlink(path).string() +
                               "', which does not exist; remove the link or point it at a file");
  if (!fs::is_regular_file(target))
    throw tapegrad::ValueError(flag + ": '" + path.string() +
                               "' is not a regular file; remove it or choose another --out");
  return true;
}

/// The pictures, their data and plots.gp that an earlier run left in `dir` are replaced at the end
/// of this one: what cannot be (a FIFO, a folder, a link to some other file) is refused now,
/// before training, by the writer's own checks (a temporary made and removed).
inline void check_replaceable_outputs(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_run_output(name) || name.ends_with(".safetensors")) continue;  // (checked below)
    try {
      tapegrad::AtomicFile probe(it->path().string(), "--out",
                                 name.ends_with(".png") ? &examples::kPngFormat : nullptr);
    } catch (const std::exception& e) {
      throw tapegrad::ValueError("--out: '" + it->path().string() +
                                 "' would be replaced by this run's, but cannot be (" + e.what() +
                                 "); move it away or choose another --out");
    }
  }
}

/// A new run (no --resume) in a folder that holds a last.safetensors replaces it at its first
/// save. Said before training, so that a forgotten --resume costs nothing; and a file there that
/// is not a checkpoint (a link to some other file, say) is refused now, not at the first save.
inline void check_replaceable_last(const std::filesystem::path& last) {
  if (std::filesystem::file_size(last) > 0) {
    try {
      tapegrad::io::load_safetensors(last.string());
    } catch (const std::exception& e) {
      throw tapegrad::ValueError(
          "--out: '" + last.string() +
          "' would be replaced by this run's checkpoint, but it is not one (" + e.what() +
          "); move it away or choose another --out");
    }
  }
  std::cout << "a new run: '" << last.string()
            << "' is replaced at the first save (--resume continues that run instead)\n";
}

/// Creates `out` if needed, locks it (when `lock`: the process that writes into it) and checks
/// that a checkpoint can be written into it: ValueError naming --out and saying why not ('', an
/// existing file, /dev/null, a folder it may not create or write); CheckpointError "InUse" naming
/// the process of another run that holds the folder.
inline RunFolder prepare_run_folder(const std::string& out, bool resume, bool lock) {
  namespace fs = std::filesystem;
  if (out.empty()) throw tapegrad::ValueError("--out: expected a folder name, got ''");
  RunFolder f{out, fs::path(out) / "last.safetensors", fs::path(out) / "best.safetensors", false,
              nullptr};
  std::error_code error;
  if (fs::exists(f.dir, error) && !fs::is_directory(f.dir, error))
    throw tapegrad::ValueError("--out: '" + out + "' exists and is not a folder");
  fs::create_directories(f.dir, error);
  if (error)
    throw tapegrad::ValueError("--out: cannot create the folder '" + out + "': " + error.message());
  if (lock) f.lock = std::make_unique<tapegrad::io::FolderLock>(out, "--out");
  try {  // a temporary made and removed by the writer every save uses
    tapegrad::AtomicFile probe((f.dir / ".write-check").string(), "--out");
  } catch (const std::exception& e) {
    throw tapegrad::ValueError("--out: cannot write into the folder '" + out + "' (" + e.what() +
                               ")");
  }
  check_replaceable_outputs(f.dir);
  f.has_last = usable_checkpoint_path(f.last, resume ? "--resume" : "--out");
  usable_checkpoint_path(f.best, "--out");
  if (f.has_last && !resume) check_replaceable_last(f.last);
  return f;
}

/// The validation loss OUT/best.safetensors holds (its note "best_val"), or infinity without one.
/// A best file whose loss cannot be read is a ValueError: the run would replace it unknowingly.
inline double best_val_on_disk(const std::filesystem::path& best) {
  if (!std::filesystem::exists(best)) return INFINITY;
  try {
    const tapegrad::io::SafetensorsFile f = tapegrad::io::load_safetensors(best.string());
    const auto v = f.metadata_value("progress.extra.best_val");
    if (!v) throw tapegrad::ValueError("it holds no note 'best_val'");
    return best_val_from(*v, best.string());
  } catch (const std::exception& e) {
    throw tapegrad::ValueError("--out: '" + best.string() +
                               "' would be replaced by this run's best model, but its validation "
                               "loss cannot be read (" +
                               e.what() + "); move it away or choose another --out");
  }
}

/// ValueError unless a run at `step` can go on to `steps`: the schedule decays over --steps, so a
/// run already past it cannot continue under it.
inline void check_step_fits(std::int64_t step, std::int64_t steps,
                            const std::filesystem::path& last) {
  if (step > steps)
    throw tapegrad::ValueError("--steps: the run in '" + last.string() + "' is at step " +
                               std::to_string(step) + ", past --steps " + std::to_string(steps) +
                               "; give --steps " + std::to_string(step) +
                               " or more (its schedule decays over --steps)");
  if (step == steps)
    std::cout << "the run in '" << last.string() << "' has done all " << steps
              << " steps: nothing to train (give a larger --steps to train on)\n";
}

}  // namespace gpt
