// src/io/staged_folder.cpp: a folder that appears whole or not at all (io/staged_folder.hpp).
#include "tapegrad/io/staged_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include "tapegrad/core/atomic_file.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::io {

namespace {
// fsync of a folder: its entries (the files in it, or the rename) reach the disk.
void sync(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

StagedFolder::StagedFolder(const std::string& target, const std::string& flag) : flag_(flag) {
  namespace fs = std::filesystem;
  fs::path p(target);
  if (!p.has_filename()) p = p.parent_path();  // "dir/" is "dir"
  const std::string name = p.filename().string();
  if (target.empty() || name == "." || name == "..")
    throw ValueError(flag + ": expected the name of a new folder, got '" + target + "'");
  target_ = p;
  parent_ = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(target_, ec);
  if (fs::is_symlink(st))
    throw ValueError(flag + ": '" + target + "' is a symbolic link; give the folder " +
                     "itself (the export replaces the folder by its name)");
  if (fs::exists(st) && !fs::is_directory(st))
    throw ValueError(flag + ": cannot make the folder '" + target +
                     "': a file of that name is there; give a new folder's name");
  if (fs::exists(st)) check_empty(target);
  fs::create_directories(parent_, ec);
  if (!fs::exists(st)) {
    made_ = fs::create_directory(target_, ec);
    if (ec) throw ValueError(flag + ": cannot make the folder '" + target + "': " + ec.message());
  }
  lock_ = std::make_unique<FolderLock>(target_.string(), flag);
  check_empty(target);  // (filled between the check and the lock by a run that did not lock)
  if (::access(parent_.c_str(), W_OK) != 0)
    throw ValueError(flag + ": cannot write in '" + parent_.string() +
                     "', where the export is written before it takes its name");
  prefix_ = atomic_temporary_prefix(name);
  remove_stale_staging();
}

StagedFolder::~StagedFolder() {
  std::error_code ec;
  if (!staging_.empty()) std::filesystem::remove_all(staging_, ec);
  if (made_ && !committed_) std::filesystem::remove(target_, ec);  // only if still empty
}

const std::filesystem::path& StagedFolder::staging() {
  if (!staging_.empty()) return staging_;
  const std::filesystem::path s = parent_ / (prefix_ + std::to_string(::getpid()));
  std::error_code ec;
  std::filesystem::remove_all(s, ec);  // one of an earlier process that had our PID
  if (!std::filesystem::create_directory(s, ec))
    throw CheckpointError(flag_ + ": cannot make the folder '" + s.string() +
                              "' to write the export into: " + ec.message(),
                          "IoError");
  staging_ = s;
  return staging_;
}

void StagedFolder::commit() {
  const std::filesystem::path& s = staging();
  sync(s);
  if (::rename(s.c_str(), target_.c_str()) != 0)
    throw CheckpointError(flag_ + ": cannot rename '" + s.string() + "' to '" + target_.string() +
                              "': " + std::strerror(errno),
                          "IoError");
  staging_.clear();
  committed_ = true;
  sync(parent_);
}

void StagedFolder::check_empty(const std::string& target) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(target_, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  if (ec) throw ValueError(flag_ + ": cannot read the folder '" + target + "': " + ec.message());
  if (names.empty()) return;
  // A model's weights first (what matters most), then the rest by name.
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return std::pair(a != "model.safetensors", a) < std::pair(b != "model.safetensors", b);
  });
  std::string shown;
  for (std::size_t i = 0; i < std::min<std::size_t>(names.size(), 3); ++i)
    shown += (i ? ", " : "") + names[i];
  if (names.size() > 3) shown += " and " + std::to_string(names.size() - 3) + " more";
  throw ValueError(flag_ + ": '" + target + "' already holds " + shown +
                   "; an export goes into a new or empty folder: choose another, or "
                   "move its files away (nothing is ever overwritten)");
}

// Staging folders of this target whose process has ended (a run killed outright).
void StagedFolder::remove_stale_staging() const {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(parent_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.rfind(prefix_, 0) != 0 || !it->is_directory(ec) || it->is_symlink(ec)) continue;
    const std::string digits = n.substr(prefix_.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(digits.c_str(), nullptr, 10);
    if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) {
      std::error_code removed;
      fs::remove_all(it->path(), removed);
    }
  }
}

}  // namespace tapegrad::io
