// include/tapegrad/io/staged_folder.hpp
//
// A folder of files that appears whole under its name, or not at all (a model exported in Hugging
// Face's layout: config.json, model.safetensors, ...).
//
//     io::StagedFolder out("gpt2-ft", "--export-hf");         // at the start: checked and locked
//     ... hours of training ...
//     pretrained::save_gpt2(model, out.staging().string());  // into ".gpt2-ft.tmp-PID" beside it
//     out.commit();                                          // renamed to gpt2-ft, whole
//
// At the start the target must be absent or an empty folder: what is there is named and refused,
// so that no model is ever overwritten or mixed with another's files. It is then made (when
// absent) and locked (io::FolderLock) for the life of the object, so a second run given the same
// target is refused at once, naming the process that holds it. The files are written into a
// sibling folder named like AtomicFile's temporaries (".NAME.tmp-PID"), which commit() renames
// over the empty target in one step (rename(2) replaces an empty folder). A run that fails or is
// stopped leaves the target as it found it: the staging folder is removed, and the target too when
// this object made it; one killed outright (kill -9) leaves its staging folder, which the next
// StagedFolder of the same target removes, its process being gone.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "tapegrad/io/folder_lock.hpp"

namespace tapegrad::io {

class StagedFolder {
 public:
  /// Checks, makes (when absent) and locks `target`; `flag` names it in every message.
  /// ValueError for a target that exists and is not an empty folder (naming what is there);
  /// CheckpointError "InUse" when another run holds it.
  StagedFolder(const std::string& target, const std::string& flag);
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  /// The sibling folder to write the files into (made at the first call).
  const std::filesystem::path& staging();
  /// Renames the staging folder over the target, then makes the rename durable.
  void commit();

  const std::filesystem::path& target() const { return target_; }

 private:
  void check_empty(const std::string& target) const;
  void remove_stale_staging() const;

  std::string flag_;
  std::filesystem::path target_, parent_, staging_;
  std::string prefix_;
  std::unique_ptr<FolderLock> lock_;
  bool made_ = false, committed_ = false;
};

}  // namespace tapegrad::io
