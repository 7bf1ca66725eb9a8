// src/io/folder_lock.cpp: one run per folder (io/folder_lock.hpp).
#include "tapegrad/io/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::io {

namespace {

// The process holding a flock on the file of `st`, read from /proc/locks, whose lines read
//     1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF
// (the pid, then the device's major and minor numbers in hex and the inode in decimal); 0 when it
// cannot be told (no /proc, or a process of another pid namespace).
long lock_holder(const struct stat& st) {
  std::ifstream locks("/proc/locks");
  std::string line;
  std::ostringstream want;
  want << std::hex << std::setfill('0') << std::setw(2) << major(st.st_dev) << ':' << std::setw(2)
       << minor(st.st_dev) << ':' << std::dec << st.st_ino;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, kind, mode, access, pid, file;
    if (!(fields >> number >> kind >> mode >> access >> pid >> file)) continue;
    if (kind == "FLOCK" && file == want.str()) {
      const long p = std::strtol(pid.c_str(), nullptr, 10);
      if (p > 0) return p;
    }
  }
  return 0;
}

}  // namespace

FolderLock::FolderLock(const std::string& dir, std::string_view flag) : dir_(dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0)
    throw CheckpointError(std::string(flag) + ": cannot open the folder '" + dir +
                              "' to lock it: " + std::strerror(errno),
                          "IoError");
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  const int err = errno;
  struct stat st {};
  const long holder = ::fstat(fd_, &st) == 0 ? lock_holder(st) : 0;
  ::close(fd_);
  fd_ = -1;
  if (err != EWOULDBLOCK)
    throw CheckpointError(
        std::string(flag) + ": cannot lock the folder '" + dir + "': " + std::strerror(err),
        "IoError");
  throw CheckpointError(
      std::string(flag) + ": the folder '" + dir + "' is in use by another run (" +
          (holder > 0 ? "process " + std::to_string(holder) : std::string("another process")) +
          " holds its lock); wait for that run to end, or give " + std::string(flag) +
          " another folder",
      "InUse");
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace tapegrad::io
