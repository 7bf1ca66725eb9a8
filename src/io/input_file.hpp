// src/io/input_file.hpp (private to the library)
//
// A regular file opened for reading by parts (pread), so that a reader can check a file's 8-byte
// length and header before it reads, or allocates for, any of its data, and then read each
// tensor straight into its destination. Every failure is a CheckpointError (kind "IoError")
// naming `where`, the path and the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tapegrad::io {

class InputFile {
 public:
  /// Opens `path`; refuses a missing file, a folder, a device, a FIFO or a socket.
  InputFile(const std::string& path, std::string_view where);
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  /// The size when it was opened.
  std::uint64_t size() const { return size_; }
  /// Reads exactly `n` bytes at `offset` into `dst`; a file that ended early (it shrank while
  /// being read) is an IoError too.
  void read(std::uint64_t offset, void* dst, std::size_t n) const;
  int fd() const { return fd_; }

 private:
  std::string where_, path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace tapegrad::io
