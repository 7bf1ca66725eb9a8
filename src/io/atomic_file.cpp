// src/io/atomic_file.cpp: replacing a file atomically (see atomic_file.hpp), and
// write_file_atomic, its one-call form.
#include "atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <optional>

#include "checkpoint_errors.hpp"
#include "checkpoint_names.hpp"
#include "checksums.hpp"
#include "tapegrad/io/crc32c.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

namespace {
// The start of the names of a target's temporaries: ".NAME.tmp-", then "PID-N". Hidden, and
// within NAME_MAX (255): a name over 200 bytes is cut to 180 and followed by the CRC-32C of the
// whole name, so that two long names sharing their first 180 bytes have distinct temporaries.
std::string temporary_prefix(const std::string& name) {
  if (name.size() <= 200) return "." + name + ".tmp-";
  return "." + name.substr(0, 180) + "~" + checksum_text(crc32c(name)) + ".tmp-";
}

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
  const std::string prefix = temporary_prefix(name);
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

// The formats a save through a symbolic link tells apart, by their first bytes: a safetensors
// file (an 8-byte little-endian header length N, then the header's '{', N bytes that fit in the
// file) and a .npy file (its magic). `size`: the whole file's.
enum class Format { safetensors, npy, other };

Format format_of(std::string_view start, std::uint64_t size) {
  if (start.size() >= 9 && start[8] == '{') {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(start[std::size_t(i)]);
    if (n >= 2 && n <= size - 8) return Format::safetensors;
  }
  if (start.starts_with("\x93NUMPY")) return Format::npy;
  return Format::other;
}

const char* format_name(Format f) {
  return f == Format::safetensors ? "a safetensors file" : f == Format::npy ? "a .npy file" : "";
}

// The format of the regular file `target` (of `size` bytes), from its first bytes; nullopt when
// it cannot be read.
std::optional<Format> format_of_file(const std::string& target, std::uint64_t size) {
  const int fd = ::open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  char start[16];
  const ssize_t got = ::pread(fd, start, sizeof start, 0);
  ::close(fd);
  if (got < 0) return std::nullopt;
  return format_of(std::string_view(start, static_cast<std::size_t>(got)), size);
}

// A save through a symbolic link replaces the file the link names only when that file is empty
// or of the format being written (what an earlier save through the link wrote): a link to
// anything else (a notes file, a system file) is more likely a mistake than a checkpoint.
void check_link_target(const std::string& path, const std::string& target, std::uint64_t size,
                       std::string_view new_start, std::string_view where) {
  if (size == 0) return;
  const Format writing = format_of(new_start, new_start.size());
  const std::optional<Format> there = format_of_file(target, size);
  if (there && writing != Format::other && *there == writing) return;
  io_error(
      where, path,
      "cannot replace the file: it is a symbolic link to " + in_quotes(target) + ", which " +
          (there ? std::string("is not ") +
                       (writing == Format::other ? "empty" : format_name(writing))
                 : std::string("cannot be read")) +
          "; a save through a link replaces only " +
          (writing == Format::other ? std::string("an empty file")
                                    : std::string(format_name(writing)) + " or an empty file") +
          " there, and wrote nothing (remove the link, or point it at such a file)",
      0);
}

// The file a save to `path` replaces, and its status when it exists: `path` itself, or the
// regular file a symbolic link at `path` leads to (check_link_target). Refuses anything else
// that exists there.
std::string file_to_replace(const std::string& path, std::string_view where,
                            std::string_view new_start, std::optional<struct stat>& existing) {
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
    check_link_target(path, target, static_cast<std::uint64_t>(st.st_size), new_start, where);
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

AtomicFile::AtomicFile(const std::string& path, std::string_view where,
                       std::string_view first_bytes)
    : where_(where), path_(path) {
  static std::atomic<unsigned> counter{0};
  check<ValueError>(std::filesystem::path(path_).has_filename(), where,
                    ": expected a file path, got ", in_quotes(path_), ", which names a folder");
  std::optional<struct stat> existing;
  target_ = file_to_replace(path_, where_, first_bytes, existing);
  const std::filesystem::path t(target_);
  dir_ = t.has_parent_path() ? t.parent_path().string() : std::string(".");
  // Readable by the owner only while it is written, when it replaces a file: a 0600 checkpoint
  // must not pass through a 0644 temporary. A new file gets 0666 less the umask, as open() gives.
  const mode_t mode = existing ? 0600 : 0666;
  remove_stale_temporaries(dir_, t.filename().string());
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = (std::filesystem::path(dir_) /
             (temporary_prefix(t.filename().string()) + std::to_string(::getpid()) + "-" +
              std::to_string(counter++)))
                .string();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100))
      io_error(where_, path_, "cannot create a temporary file in its folder", errno);
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

void write_file_atomic(const std::string& path, std::string_view bytes, std::string_view where) {
  AtomicFile out(path, where, bytes);
  out.write(bytes);
  out.commit();
}

}  // namespace tapegrad::io
