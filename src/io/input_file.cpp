// src/io/input_file.cpp: read_file, the whole content of a regular file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "checkpoint_errors.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

std::string read_file(const std::string& path, std::string_view where) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) io_error(where, path, "cannot open", errno);
  struct stat st {};
  std::string out;
  int err = 0;
  const char* what = "cannot read";
  if (::fstat(fd, &st) != 0) {
    err = errno;
  } else if (!S_ISREG(st.st_mode)) {
    what = S_ISDIR(st.st_mode) ? "expected a file, got a folder" : "expected a regular file, got a "
                                                                    "device, pipe or socket";
  } else {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    for (;;) {                                    // until end of file: the size is only a hint
      if (got == out.size()) out.resize(std::max<std::size_t>(2 * out.size(), 4096));
      const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) { err = errno; break; }
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
  }
  ::close(fd);
  if (err != 0 || !S_ISREG(st.st_mode)) io_error(where, path, what, err);
  return out;
}

}  // namespace tapegrad::io
