// src/io/input_file.cpp: InputFile (see input_file.hpp), and read_file, the whole content of a
// regular file.
#include "input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "checkpoint_errors.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

InputFile::InputFile(const std::string& path, std::string_view where) : where_(where), path_(path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) io_error(where, path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    io_error(where, path, "cannot read", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    io_error(where, path,
             S_ISDIR(st.st_mode) ? "expected a file, got a folder"
                                 : "expected a regular file, got a device, pipe or socket",
             0);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() { ::close(fd_); }

void InputFile::read(std::uint64_t offset, void* dst, std::size_t n) const {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const std::size_t piece =
        std::min<std::size_t>(n, std::size_t{1} << 30);  // Linux reads < 2 GiB at once
    const ssize_t r = ::pread(fd_, p, piece, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) io_error(where_, path_, "cannot read", errno);
    if (r == 0)
      io_error(where_, path_,
               "cannot read: the file ended at byte " + std::to_string(offset) + ", before the " +
                   std::to_string(n) +
                   " more bytes its header announces (was it changed while being read?)",
               0);
    p += r;
    offset += static_cast<std::uint64_t>(r);
    n -= static_cast<std::size_t>(r);
  }
}

std::string read_file(const std::string& path, std::string_view where, std::uint64_t max_bytes) {
  const InputFile in(path, where);
  if (in.size() > max_bytes)
    io_error(where, path,
             "expected at most " + std::to_string(max_bytes) + " bytes, got a file of " +
                 std::to_string(in.size()),
             0);
  std::string out(static_cast<std::size_t>(in.size()), '\0');
  std::size_t got = 0;
  for (;;) {  // until end of file: the size is only a hint
    if (got == out.size()) {
      if (got >= max_bytes)  // (it grew while being read)
        io_error(where, path, "expected at most " + std::to_string(max_bytes) + " bytes", 0);
      out.resize(std::max<std::size_t>(2 * out.size(), 4096));
    }
    const ssize_t r = ::read(in.fd(), out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) io_error(where, path, "cannot read", errno);
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  out.resize(got);
  return out;
}

}  // namespace tapegrad::io
