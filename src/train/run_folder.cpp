// src/train/run_folder.cpp: the run's folder, checked and locked (run_folder.hpp).
#include "tapegrad/train/run_folder.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>

#include <fcntl.h>
#include <unistd.h>

#include "history.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/atomic_file.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/train/pictures.hpp"

namespace tapegrad::train {

namespace fs = std::filesystem;

namespace {

/// What is at `path` for a checkpoint that will be written there: nothing or a regular file
/// (through a link, as `cp` writes); anything else is a ValueError naming `flag` and the path.
bool usable_checkpoint_path(const fs::path& path, const std::string& flag) {
  const fs::file_status link = fs::symlink_status(path);
  if (!fs::exists(link)) return false;
  std::error_code error;
  const fs::file_status target = fs::status(path, error);
  if (fs::is_symlink(link) && !fs::exists(target))
    throw ValueError(flag + ": '" + path.string() + "' is a symbolic link to '" +
                     fs::read_symlink(path).string() +
                     "', which does not exist; remove the link or point it at a file");
  if (!fs::is_regular_file(target))
    throw ValueError(flag + ": '" + path.string() +
                     "' is not a regular file; remove it or choose another --out");
  return true;
}

/// A new run (no --resume) in a folder that holds a last.safetensors replaces it at its first
/// save. Said before training, so that a forgotten --resume costs nothing; and a file there that
/// is not a checkpoint (a link to some other file, say) is refused now, not at the first save.
void check_replaceable_last(const fs::path& last) {
  if (fs::file_size(last) > 0) {
    try {
      io::load_safetensors(last.string());
    } catch (const std::exception& e) {
      throw ValueError("--out: '" + last.string() +
                       "' would be replaced by this run's checkpoint, but it is not one (" +
                       e.what() + "); move it away or choose another --out");
    }
  }
  std::cout << "a new run: '" << last.string()
            << "' is replaced at the first save (--resume continues that run instead)\n";
}

/// The files an earlier run left in `dir` that this one replaces at its end: what cannot be (a
/// FIFO, a folder, a link to some other file) is refused now, before training, by the writer's own
/// checks (a temporary made and removed).
void check_replaceable_outputs(const fs::path& dir, bool (*is_output)(const std::string&)) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_output(name) || name.ends_with(".safetensors")) continue;  // (checked below)
    try {
      AtomicFile probe(it->path().string(), "--out",
                       name.ends_with(".png") ? &kPngFormat : nullptr);
    } catch (const std::exception& e) {
      throw ValueError("--out: '" + it->path().string() +
                       "' would be replaced by this run's, but cannot be (" + e.what() +
                       "); move it away or choose another --out");
    }
  }
}

/// The validation loss best.safetensors holds (its note "best_val"), or infinity without one.
/// A best file whose loss cannot be read is a ValueError: the run would replace it unknowingly.
double best_val_on_disk(const fs::path& best) {
  if (!fs::exists(best)) return INFINITY;
  try {
    const io::SafetensorsFile f = io::load_safetensors(best.string());
    const auto v = f.metadata_value("progress.extra.best_val");
    if (!v) throw ValueError("it holds no note 'best_val'");
    return detail::best_val_from(*v, best.string());
  } catch (const std::exception& e) {
    throw ValueError("--out: '" + best.string() +
                     "' would be replaced by this run's best model, but its validation loss "
                     "cannot be read (" +
                     e.what() + "); move it away or choose another --out");
  }
}

}  // namespace

bool RunFolder::trainer_output(const std::string& name) {
  return name == "loss.dat" || name == "val.dat" || name == "plots.gp" || name == "loss.png";
}

RunFolder::RunFolder(const std::string& out, bool resume, bool lock,
                     bool (*is_output)(const std::string& name)) {
  if (out.empty()) throw ValueError("--out: expected a folder name, got ''");
  RunFolder& f = *this;
  f.dir = out, f.last = f.dir / "last.safetensors", f.best = f.dir / "best.safetensors";
  std::error_code error;
  if (fs::exists(f.dir, error) && !fs::is_directory(f.dir, error))
    throw ValueError("--out: '" + out + "' exists and is not a folder");
  fs::create_directories(f.dir, error);
  if (error) throw ValueError("--out: cannot create the folder '" + out + "': " + error.message());
  if (lock) lock_ = std::make_unique<io::FolderLock>(out, "--out");
  try {  // a temporary made and removed by the writer every save uses
    AtomicFile probe((f.dir / ".write-check").string(), "--out");
  } catch (const std::exception& e) {
    throw ValueError("--out: cannot write into the folder '" + out + "' (" + e.what() + ")");
  }
  check_replaceable_outputs(f.dir, is_output);
  f.has_last = usable_checkpoint_path(f.last, resume ? "--resume" : "--out");
  usable_checkpoint_path(f.best, "--out");
  if (f.has_last && !resume) check_replaceable_last(f.last);
  best_on_disk = best_val_on_disk(f.best);  // never replaced by a worse model
}

}  // namespace tapegrad::train
