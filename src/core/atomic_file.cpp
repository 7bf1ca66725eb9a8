// src/core/atomic_file.cpp: replacing a file atomically (include/tapegrad/core/atomic_file.hpp).
#include "tapegrad/core/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include "tapegrad/core/errors.hpp"

namespace tapegrad {

namespace {

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

/// Throws CheckpointError kind "IoError": "where: 'path': what[: strerror(err)]" (err 0: none).
[[noreturn]] void io_error(std::string_view where, std::string_view path, std::string_view what,
                           int err) {
  std::ostringstream os;
  os << where << ": " << in_quotes(path) << ": " << what;
  if (err != 0) os << ": " << std::strerror(err);
  throw CheckpointError(os.str(), "IoError");
}

/// A decimal integer filling all of `text`, or nullopt.
template <class T>
std::optional<T> parse_integer(std::string_view text) {
  T value{};
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (err != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

// Hidden, and within NAME_MAX (255): a long name is cut, then followed by the FNV-1a 64 hash of
// the whole name, so that two long names sharing their first 180 bytes have distinct temporaries.
std::string atomic_temporary_prefix(const std::string& name) {
  if (name.size() <= 200) return "." + name + ".tmp-";
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  char hex[17];
  for (int i = 15; i >= 0; --i, h >>= 4) hex[i] = "0123456789abcdef"[h & 15];
  hex[16] = '\0';
  return "." + name.substr(0, 180) + "~" + hex + ".tmp-";
}

namespace {

// The process id in the name of a temporary of a target whose temporaries start with `prefix`,
// or 0 when the name does not have that exact form: prefix, PID, '-', N, both as std::to_string
// writes them (decimal digits, no sign, no leading zero).
pid_t temporary_owner(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return 0;
  name.remove_prefix(prefix.size());
  const std::size_t dash = name.find('-');
  if (dash == std::string_view::npos) return 0;
  const auto decimal = [](std::string_view t) {
    return !t.empty() && (t.size() == 1 || t[0] != '0') &&
           std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!decimal(name.substr(0, dash)) || !decimal(name.substr(dash + 1))) return 0;
  const auto pid = parse_integer<pid_t>(name.substr(0, dash));
  return pid && *pid > 0 ? *pid : 0;
}

// Removes the temporaries of `name` in `dir` that saves left when their process died: a kill
// during a save leaves one, as large as the checkpoint. A temporary whose process is still
// running (a save in progress, or an unrelated process that was given the same PID since) is
// left alone, as is every file that does not have exactly the temporaries' form. Best effort:
// a temporary that cannot be removed (another user's, in a shared folder) stays.
void remove_stale_temporaries(const std::string& dir, const std::string& name) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;  // creating the temporary will say why
  const std::string prefix = atomic_temporary_prefix(name);
  while (const dirent* e = ::readdir(d)) {
    const pid_t pid = temporary_owner(e->d_name, prefix);
    if (pid == 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // running (EPERM: someone else's process)
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      ::unlinkat(::dirfd(d), e->d_name, 0);
  }
  ::closedir(d);
}

// What is at a path that is not a regular file, for a message.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The first bytes of the regular file `target` (up to 16), or nullopt when it cannot be read.
std::optional<std::string> first_bytes_of(const std::string& target) {
  const int fd = ::open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  char start[16];
  const ssize_t got = ::pread(fd, start, sizeof start, 0);
  ::close(fd);
  if (got < 0) return std::nullopt;
  return std::string(start, static_cast<std::size_t>(got));
}

// A save through a symbolic link replaces the file the link names only when that file is empty
// or of the format being written (what an earlier save through the link wrote): a link to
// anything else (a notes file, a system file) is more likely a mistake than a checkpoint.
void check_link_target(const std::string& path, const std::string& target, std::uint64_t size,
                       const FileFormat* format, std::string_view where) {
  if (size == 0) return;
  const std::optional<std::string> there = first_bytes_of(target);
  if (there && format != nullptr && format->matches(*there, size)) return;
  const std::string replaceable =
      format == nullptr ? "an empty file" : std::string(format->name) + " or an empty file";
  io_error(where, path,
           "cannot replace the file: it is a symbolic link to " + in_quotes(target) + ", which " +
               (there ? "is not " + (format == nullptr ? std::string("empty") : format->name)
                      : std::string("cannot be read")) +
               "; a save through a link replaces only " + replaceable +
               " there, and wrote nothing (remove the link, or point it at such a file)",
           0);
}

// The file a save to `path` replaces, and its status when it exists: `path` itself, or the
// regular file a symbolic link at `path` leads to (check_link_target). Refuses anything else
// that exists there.
std::string file_to_replace(const std::string& path, std::string_view where,
                            const FileFormat* format, std::optional<struct stat>& existing) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a new file (or a missing folder: reported later)
    io_error(where, path, "cannot look at the file to replace", errno);
  }
  std::string target = path;
  const char* refused = "; a save replaces regular files only, and wrote nothing";
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    target = std::filesystem::canonical(path, ec).string();
    if (ec || ::stat(target.c_str(), &st) != 0)
      io_error(
          where, path,
          std::string("cannot replace the file: it is a symbolic link to nothing (or in a loop)") +
              refused,
          0);
    if (!S_ISREG(st.st_mode))
      io_error(where, path,
               "cannot replace the file: it is a symbolic link to " + in_quotes(target) +
                   ", which is " + kind_of(st.st_mode) + ", not a regular file" + refused,
               0);
    check_link_target(path, target, static_cast<std::uint64_t>(st.st_size), format, where);
  }
  if (S_ISDIR(st.st_mode))  // the words rename() would have used
    io_error(where, path, std::string("cannot replace the file: Is a directory") + refused, 0);
  if (!S_ISREG(st.st_mode))
    io_error(
        where, path,
        "cannot replace the file: it is " + kind_of(st.st_mode) + ", not a regular file" + refused,
        0);
  existing = st;
  return target;
}
}  // namespace

AtomicFile::AtomicFile(const std::string& path, std::string_view where, const FileFormat* format)
    : where_(where), path_(path) {
  static std::atomic<unsigned> counter{0};
  check<ValueError>(std::filesystem::path(path_).has_filename(), where,
                    ": expected a file path, got ", in_quotes(path_), ", which names a folder");
  std::optional<struct stat> existing;
  target_ = file_to_replace(path_, where_, format, existing);
  const std::filesystem::path t(target_);
  dir_ = t.has_parent_path() ? t.parent_path().string() : std::string(".");
  // Readable by the owner only while it is written, when it replaces a file: a 0600 checkpoint
  // must not pass through a 0644 temporary. A new file gets 0666 less the umask, as open() gives.
  const mode_t mode = existing ? 0600 : 0666;
  remove_stale_temporaries(dir_, t.filename().string());
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = (std::filesystem::path(dir_) /
             (atomic_temporary_prefix(t.filename().string()) + std::to_string(::getpid()) + "-" +
              std::to_string(counter++)))
                .string();
    // Exclusive: a name that exists (a file, a link, a FIFO someone planted) is never opened,
    // followed or waited on; the next counter is tried instead.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                 mode);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100)) {
      const int err = errno;
      temp_.clear();
      io_error(where_, path_,
               "cannot create a temporary file in its folder " + in_quotes(dir_) +
                   " (a save writes one there, then renames it over the target)",
               err);
    }
  }
  if (existing) {
    // Owner and group first (chown clears set-user-ID bits), then the permission bits. Only root
    // may give a file away; anyone may keep the group if they belong to it; else the new file
    // is the process's, as any file it creates.
    if ((existing->st_uid != ::geteuid() || existing->st_gid != ::getegid()) &&
        ::fchown(fd_, existing->st_uid, existing->st_gid) != 0)
      (void)::fchown(fd_, static_cast<uid_t>(-1), existing->st_gid);
    if (::fchmod(fd_, existing->st_mode & 07777) != 0)  // (a throwing constructor: no destructor)
      fail("cannot give the temporary file the permissions of the file it replaces", errno);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(std::string_view what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  temp_.clear();
  io_error(where_, path_, what, err);
}

void AtomicFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t w = ::write(fd_, bytes.data(), bytes.size());
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail("cannot write", errno);
    bytes.remove_prefix(static_cast<std::size_t>(w));
  }
}

// fsync, close, rename over the target, fsync the folder so the rename itself is durable.
void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("cannot flush to disk", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close the temporary file", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("cannot replace the file", errno);
  committed_ = true;
  const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) io_error(where_, path_, "written, but cannot open its folder to sync it", errno);
  const int synced = ::fsync(dir_fd), err = errno;
  ::close(dir_fd);
  if (synced != 0 && err != EINVAL)  // EINVAL: the file system cannot sync folders
    io_error(where_, path_, "written, but cannot sync its folder", err);
}

void AtomicFile::write_at(std::uint64_t offset, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t w = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail("cannot write", errno);
    bytes.remove_prefix(static_cast<std::size_t>(w));
    offset += static_cast<std::uint64_t>(w);
  }
}

void AtomicFile::write_whole(const std::string& path, std::string_view bytes,
                             std::string_view where, const FileFormat* format) {
  AtomicFile out(path, where, format);
  out.write(bytes);
  out.commit();
}

}  // namespace tapegrad
