// src/data/text.cpp: corpus files, UTF-8, entries and the split by whole entries (data/text.hpp).
#include "tapegrad/data/text.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::data {

namespace fs = std::filesystem;

std::vector<std::string> fortune_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto ends = [&](const std::string& tail) {
      return name.size() >= tail.size() &&
             name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (e.is_symlink() || !e.is_regular_file() || ends(".dat") || ends(".u8") ||
        name.front() == '.')
      continue;
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::u32string decode_utf8(const std::string& bytes, const std::string& source) {
  std::u32string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    // The sequence's length from its first byte: 0xxxxxxx, 110xxxxx, 1110xxxx, 11110xxx.
    const std::size_t n = b0 < 0x80           ? 1
                          : (b0 >> 5) == 0x6  ? 2
                          : (b0 >> 4) == 0xE  ? 3
                          : (b0 >> 3) == 0x1E ? 4
                                              : 0;
    char32_t c = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    bool ok = n != 0 && i + n <= bytes.size();
    for (std::size_t k = 1; ok && k < n; ++k) {  // continuation bytes: 10xxxxxx
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      ok = (b >> 6) == 0x2;
      c = (c << 6) | (b & 0x3F);
    }
    const char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
    ok = ok && c >= least[n] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    if (!ok) fail<DataError>("'", source, "' is not UTF-8 text: invalid byte sequence at byte ", i);
    out.push_back(c);
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string encode_utf8(const std::u32string& text) {
  std::string out;
  for (char32_t c : text) append_utf8(out, c);
  return out;
}

namespace {
bool is_blank(const std::u32string& s) {
  return std::all_of(s.begin(), s.end(), [](char32_t c) {
    return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r';
  });
}
}  // namespace

namespace {

// The lines of `text` without their line ends: "\n", or "\r\n" (a file saved on Windows).
std::vector<std::u32string> lines_of(const std::u32string& text) {
  std::vector<std::u32string> lines;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find(U'\n', begin);
    const bool ended = end != std::u32string::npos;
    if (!ended) end = text.size();
    std::size_t cut = end;
    if (ended && cut > begin && text[cut - 1] == U'\r') --cut;
    lines.push_back(text.substr(begin, cut - begin));
    begin = end + 1;
  }
  return lines;
}

// A file's text: DataError naming it unless it is a regular file (a FIFO would block the read for
// ever, a device may never end) of UTF-8.
std::u32string read_utf8_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    fail<DataError>("cannot read '", path, "': ",
                    fs::exists(path, ec) ? "not a regular file (a folder, a FIFO or a device)"
                                         : "no such file");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail<DataError>("cannot read '", path, "'");
  std::ostringstream bytes;
  bytes << f.rdbuf();
  if (f.bad()) fail<DataError>("cannot read '", path, "'");
  return decode_utf8(bytes.str(), path);
}

}  // namespace

bool is_fortune_text(const std::u32string& text) {
  const std::vector<std::u32string> lines = lines_of(text);
  return std::find(lines.begin(), lines.end(), U"%") != lines.end();
}

bool is_fortune_file(const std::string& path) { return is_fortune_text(read_utf8_file(path)); }

std::vector<std::u32string> split_entries_of(const std::u32string& text) {
  const std::vector<std::u32string> lines = lines_of(text);
  const bool fortune_format = std::find(lines.begin(), lines.end(), U"%") != lines.end();
  std::vector<std::u32string> entries;
  std::u32string current;
  for (const std::u32string& line : lines) {
    const bool separator = fortune_format ? line == U"%" : is_blank(line);
    if (separator) {
      if (!is_blank(current)) entries.push_back(current);
      current.clear();
    } else {
      current += line + U"\n";
    }
  }
  if (!is_blank(current)) entries.push_back(current);
  return entries;
}

std::vector<std::u32string> read_entries(const std::vector<std::string>& files) {
  std::vector<std::u32string> entries;
  std::unordered_set<std::u32string> seen;
  for (const std::string& path : files)
    for (std::u32string& e : split_entries_of(read_utf8_file(path)))
      if (seen.insert(e).second) entries.push_back(std::move(e));
  return entries;
}

Split split_entries(const std::vector<std::u32string>& entries, double val_fraction,
                    std::uint64_t seed) {
  const std::size_t n = entries.size();
  if (n < 2)
    fail<ValueError>(
        "split_entries: expected at least 2 entries for a train/validation split, got ", n,
        " (entries are separated by lines holding only %, or by blank lines)");
  check<ValueError>(val_fraction > 0.0 && val_fraction < 1.0,
                    "split_entries: expected a validation fraction in (0, 1), got ", val_fraction);
  auto n_val = static_cast<std::size_t>(std::floor(double(n) * val_fraction + 0.5));
  n_val = std::clamp<std::size_t>(n_val, 1, n - 1);
  std::vector<std::size_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[i] = i;
  Generator gen(seed);
  for (std::size_t i = n - 1; i >= 1; --i)
    std::swap(perm[i], perm[std::size_t(gen.randint(0, std::int64_t(i) + 1))]);
  std::vector<bool> is_val(n, false);
  for (std::size_t k = 0; k < n_val; ++k) is_val[perm[k]] = true;
  Split s;
  for (std::size_t i = 0; i < n; ++i) (is_val[i] ? s.val : s.train).push_back(entries[i]);
  return s;
}

std::u32string join_entries(const std::vector<std::u32string>& entries) {
  std::u32string out;
  for (const std::u32string& e : entries) out += e + U"%\n";
  return out;
}

std::u32string read_text(const std::vector<std::string>& files) {
  std::u32string text;
  for (const std::string& path : files) text += read_utf8_file(path);
  return text;
}

TextSplit split_text(const std::u32string& text, double val_fraction) {
  check<ValueError>(val_fraction > 0.0 && val_fraction < 1.0,
                    "split_text: expected a validation fraction in (0, 1), got ", val_fraction);
  // As nanoGPT's int(n * 0.9): 1 - 0.1 is the double 0.9, so the cut is the same character.
  const auto n_train =
      static_cast<std::size_t>(std::floor(double(text.size()) * (1.0 - val_fraction)));
  return {text.substr(0, n_train), text.substr(n_train)};
}

}  // namespace tapegrad::data
