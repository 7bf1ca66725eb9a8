// src/io/atomic_file.cpp: replacing a file atomically (see atomic_file.hpp), and
// write_file_atomic, its one-call form.
#include "atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>

#include "checkpoint_errors.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

AtomicFile::AtomicFile(const std::string& path, std::string_view where) : where_(where), target_(path) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path t(target_);
  check<ValueError>(t.has_filename(), where, ": expected a file path, got ", in_quotes(target_),
                    ", which names a folder");
  dir_ = t.has_parent_path() ? t.parent_path().string() : std::string(".");
  for (int attempt = 0; fd_ < 0; ++attempt) {
    // Hidden, and short enough for NAME_MAX whatever the target's name.
    temp_ = (std::filesystem::path(dir_) / ("." + t.filename().string().substr(0, 200) + ".tmp-" +
             std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100))
      io_error(where_, target_, "cannot create a temporary file in its folder", errno);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t w = ::write(fd_, bytes.data(), bytes.size());
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) io_error(where_, target_, "cannot write", errno);
    bytes.remove_prefix(static_cast<std::size_t>(w));
  }
}

// fsync, close, rename over the target, fsync the folder so the rename itself is durable.
void AtomicFile::commit() {
  if (::fsync(fd_) != 0) io_error(where_, target_, "cannot flush to disk", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) io_error(where_, target_, "cannot close the temporary file", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) io_error(where_, target_, "cannot replace the file", errno);
  committed_ = true;
  const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) io_error(where_, target_, "written, but cannot open its folder to sync it", errno);
  const int synced = ::fsync(dir_fd), err = errno;
  ::close(dir_fd);
  if (synced != 0 && err != EINVAL)             // EINVAL: the file system cannot sync folders
    io_error(where_, target_, "written, but cannot sync its folder", err);
}

void write_file_atomic(const std::string& path, std::string_view bytes, std::string_view where) {
  AtomicFile out(path, where);
  out.write(bytes);
  out.commit();
}

}  // namespace tapegrad::io
