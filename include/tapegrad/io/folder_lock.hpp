// include/tapegrad/io/folder_lock.hpp
//
// One run per folder. Two training runs given the same --out would each write last.safetensors
// and best.safetensors, and the worse run could replace the better model; two exports into one
// folder would mix their files. A FolderLock is an advisory lock (flock(2), exclusive) on the
// folder itself, taken at the start of a run and held until the object is destroyed or the
// process ends, however it ends (the kernel releases it: a kill -9 leaves no stale lock). A
// second run is refused at once, naming the folder and the process that holds it.
//
//     io::FolderLock lock(out_dir, "--out");   // throws if another run holds it
//
// Advisory: it keeps out other tapegrad runs (and anything else that asks with flock), not a
// program that writes without asking. The lock is not inherited by programs the run starts
// (gnuplot): it ends with the run.
#pragma once

#include <string>
#include <string_view>

namespace tapegrad::io {

class FolderLock {
 public:
  /// Locks the existing folder `dir`. CheckpointError kind "InUse" when another process holds it,
  /// naming `flag`, the folder and that process's id (when the system says: Linux's
  /// /proc/locks); kind "IoError" when the folder cannot be opened.
  FolderLock(const std::string& dir, std::string_view flag);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  const std::string& folder() const { return dir_; }

 private:
  std::string dir_;
  int fd_ = -1;
};

}  // namespace tapegrad::io
