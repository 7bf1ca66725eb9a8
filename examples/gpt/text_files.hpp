// examples/gpt/text_files.hpp: --data's files, checked before they are read. A FIFO with no
// writer would block the read for ever and /dev/zero never ends, so only regular files are read;
// a folder is named as such; and the files together may hold at most kMaxTextBytes, known from
// their sizes before a byte is read (the text is held as 4-byte code points, then as 8-byte ids:
// 16 MiB of text already takes about half a gigabyte, four times Shakespeare's works).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <tapegrad/tapegrad.hpp>

namespace gpt {

inline constexpr std::uintmax_t kMaxTextBytes = 16u << 20;

/// DataError naming the flag and the file unless every file is a regular file and all of them
/// together hold at most kMaxTextBytes.
inline void check_text_files(const std::vector<std::string>& files) {
  std::uintmax_t total = 0;
  for (const std::string& path : files) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
      throw tapegrad::DataError("--data: cannot read '" + path + "': " + std::strerror(errno));
    if (S_ISDIR(st.st_mode))
      throw tapegrad::DataError("--data: '" + path +
                                "' is a folder; --data expects text files (every file in it: "
                                "--data '" +
                                path + "'/*)");
    if (!S_ISREG(st.st_mode))
      throw tapegrad::DataError("--data: '" + path +
                                "' is not a regular file (a FIFO, a device or a socket); --data "
                                "expects text files");
    total += std::uintmax_t(st.st_size);
    if (total > kMaxTextBytes)
      throw tapegrad::DataError("--data: the text files hold " + std::to_string(total >> 20) +
                                " MiB or more (up to '" + path + "'), more than the " +
                                std::to_string(kMaxTextBytes >> 20) +
                                " MiB this program reads; give a part of the text");
  }
}

}  // namespace gpt
