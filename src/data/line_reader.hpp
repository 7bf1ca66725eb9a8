// src/data/line_reader.hpp: a text file's lines, one at a time, none longer than 1 MiB, and a line
// quoted in a message; private to src/data, for the loaders of tokenizer files.
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::data::detail {

/// A line as a message quotes it: at most 40 bytes, control bytes as '?'.
inline std::string excerpt(std::string_view line) {
  std::string s(line.substr(0, 40));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return "\"" + s + (line.size() > 40 ? "...\"" : "\"");
}

class LineReader {
 public:
  static constexpr std::size_t kMaxLine = std::size_t(1) << 20;

  /// Errors say "<who>: <path> line <n>: ...".
  LineReader(std::istream& in, const std::string& path, const char* who)
      : in_(in), path_(path), who_(who) {}

  /// The next line without its line end, "\n" or "\r\n" (a file saved with Windows line ends
  /// reads as the same lines); false at the end of the file. A line longer than kMaxLine is a
  /// DataError naming the file and the line: a hostile file cannot make it allocate more.
  bool next(std::string& line) {
    line.clear();
    std::streambuf* buf = in_.rdbuf();
    int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) return false;
    ++number;
    for (; c != std::char_traits<char>::eof() && c != '\n'; c = buf->sbumpc()) {
      if (line.size() == kMaxLine)
        fail<DataError>(who_, ": ", path_, " line ", number,
                        ": expected a line of at most 1 MiB, got a longer one");
      line += char(c);
    }
    if (c == '\n' && !line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }
  std::size_t number = 0;  ///< of the line last read, from 1

 private:
  std::istream& in_;
  const std::string& path_;
  const char* who_;
};

}  // namespace tapegrad::data::detail
