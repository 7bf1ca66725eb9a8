// examples/gpt/text_data.hpp: the GPT example's data, from text files to batches of token ids.
//
//   files     Debian's fortunes (/usr/share/games/fortunes: every file but the .dat indexes and
//             the .u8 links), or any UTF-8 text files given with --data, read in the order given
//             (the fortunes sorted by name)
//   entries   the text between lines holding only "%" (the fortune format); a file without such
//             lines is cut at blank lines (paragraphs). Blank entries are dropped, and so is an
//             entry whose text already appeared (the fortunes repeat some quotations across files),
//             so that no text can be on both sides of the split
//   split     a seeded shuffle of the entries picks the validation entries (10 % by default); each
//             side keeps the entries' original order, and each entry is followed by "%\n", so both
//             streams read like fortune files
//   vocab     the characters (Unicode code points) of the training stream, sorted, ids 1 .. V-1;
//             id 0 is <unk>, for a character that only the validation text (or a prompt) holds. An
//             <unk> target is not scored (the loss's ignore_index), since no model could know it
//   batches   B random windows of T + 1 ids from the training stream (seeded): x = ids[s, s + T),
//             y = ids[s + 1, s + T + 1]. Validation uses a fixed set of windows, drawn once.
// bench/gpt_torch.py implements the same steps, so both sides train and validate on the same text.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include <tapegrad/tapegrad.hpp>

namespace gpt {

namespace fs = std::filesystem;

inline const char* kFortunesDir = "/usr/share/games/fortunes";

/// The fortune files of `dir`, sorted by name: regular files, not the .dat indexes or .u8 links.
inline std::vector<std::string> fortune_files(const std::string& dir = kFortunesDir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
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

/// UTF-8 bytes -> code points. Invalid UTF-8 (a stray byte, an overlong form, a surrogate) is a
/// std::runtime_error naming `source` and the byte offset.
inline std::u32string decode_utf8(const std::string& bytes, const std::string& source) {
  std::u32string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    std::size_t n = b0 < 0x80           ? 1
                    : (b0 >> 5) == 0x6  ? 2
                    : (b0 >> 4) == 0xE  ? 3
                    : (b0 >> 3) == 0x1E ? 4
                                        : 0;
    char32_t c = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    bool ok = n != 0 && i + n <= bytes.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      ok = (b >> 6) == 0x2;
      c = (c << 6) | (b & 0x3F);
    }
    const char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && c >= least[n] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    if (!ok)
      throw std::runtime_error(
          "'" + source + "' is not UTF-8 text: invalid byte sequence at byte " + std::to_string(i));
    out.push_back(c);
    i += n;
  }
  return out;
}

inline void append_utf8(std::string& out, char32_t c) {
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

inline std::string encode_utf8(const std::u32string& text) {
  std::string out;
  for (char32_t c : text) append_utf8(out, c);
  return out;
}

inline bool is_blank(const std::u32string& s) {
  return std::all_of(s.begin(), s.end(), [](char32_t c) {
    return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r';
  });
}

/// The entries of one file's text: between "%" lines, or, without any, between blank lines.
/// Each entry keeps its lines, each ending with "\n".
inline std::vector<std::u32string> split_entries_of(const std::u32string& text) {
  std::vector<std::u32string> lines;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find(U'\n', begin);
    if (end == std::u32string::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
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

/// Every entry of every file, in order, each text once (the first occurrence is kept). Files that
/// cannot be read, or are not UTF-8, are a std::runtime_error naming them.
inline std::vector<std::u32string> read_entries(const std::vector<std::string>& files) {
  std::vector<std::u32string> entries;
  std::unordered_set<std::u32string> seen;
  for (const std::string& path : files) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read '" + path + "'");
    std::ostringstream bytes;
    bytes << f.rdbuf();
    for (std::u32string& e : split_entries_of(decode_utf8(bytes.str(), path)))
      if (seen.insert(e).second) entries.push_back(std::move(e));
  }
  return entries;
}

struct Split {
  std::vector<std::u32string> train, val;  ///< whole entries, each in its original order
};

/// A seeded split by whole entries: a Fisher-Yates shuffle of the indices (for i = n-1 .. 1: swap
/// i with randint(0, i + 1)) whose first floor(n * val_fraction + 0.5) (at least 1, at most n - 1)
/// go to validation. Needs 2 entries or more.
inline Split split_entries(const std::vector<std::u32string>& entries, double val_fraction,
                           std::uint64_t seed) {
  const std::size_t n = entries.size();
  if (n < 2)
    throw std::runtime_error("the text has " + std::to_string(n) + " entr" +
                             (n == 1 ? "y" : "ies") +
                             "; a train/validation split needs at least 2 (entries are separated "
                             "by lines holding only %, or by blank lines)");
  if (!(val_fraction > 0.0 && val_fraction < 1.0))
    throw std::runtime_error("expected a validation fraction in (0, 1), got " +
                             std::to_string(val_fraction));
  auto n_val = static_cast<std::size_t>(std::floor(double(n) * val_fraction + 0.5));
  n_val = std::clamp<std::size_t>(n_val, 1, n - 1);
  std::vector<std::size_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[i] = i;
  tapegrad::Generator gen(seed);
  for (std::size_t i = n - 1; i >= 1; --i)
    std::swap(perm[i], perm[std::size_t(gen.randint(0, std::int64_t(i) + 1))]);
  std::vector<bool> is_val(n, false);
  for (std::size_t k = 0; k < n_val; ++k) is_val[perm[k]] = true;
  Split s;
  for (std::size_t i = 0; i < n; ++i) (is_val[i] ? s.val : s.train).push_back(entries[i]);
  return s;
}

/// The entries one after the other, each followed by "%\n".
inline std::u32string join_entries(const std::vector<std::u32string>& entries) {
  std::u32string out;
  for (const std::u32string& e : entries) out += e + U"%\n";
  return out;
}

/// Character-level vocabulary: id 0 is <unk>, ids 1 .. V-1 the training text's characters, sorted.
class Vocabulary {
 public:
  static constexpr std::int64_t kUnk = 0;
  Vocabulary() = default;
  explicit Vocabulary(const std::u32string& training_text) {
    const std::set<char32_t> chars(training_text.begin(), training_text.end());
    chars_.assign(chars.begin(), chars.end());
    index();
  }
  /// The characters of ids 1 .. V-1 as UTF-8 text (how the checkpoint stores the vocabulary).
  std::string to_text() const { return encode_utf8(chars_); }
  static Vocabulary from_text(const std::string& utf8) {
    Vocabulary v;
    const std::u32string chars = decode_utf8(utf8, "the checkpoint's vocabulary");
    v.chars_.assign(chars.begin(), chars.end());
    if (!std::is_sorted(v.chars_.begin(), v.chars_.end()) ||
        std::adjacent_find(v.chars_.begin(), v.chars_.end()) != v.chars_.end())
      throw std::runtime_error(
          "the checkpoint's vocabulary is not a sorted list of distinct characters");
    v.index();
    return v;
  }
  std::int64_t size() const { return std::int64_t(chars_.size()) + 1; }
  std::int64_t id(char32_t c) const {
    const auto it = ids_.find(c);
    return it == ids_.end() ? kUnk : it->second;
  }
  std::vector<std::int64_t> encode(const std::u32string& text) const {
    std::vector<std::int64_t> ids(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) ids[i] = id(text[i]);
    return ids;
  }
  /// UTF-8 text of ids; <unk> prints as U+FFFD (the replacement character).
  std::string decode(const std::int64_t* ids, std::size_t n) const {
    std::string out;
    for (std::size_t i = 0; i < n; ++i)
      append_utf8(out,
                  ids[i] >= 1 && ids[i] < size() ? chars_[std::size_t(ids[i] - 1)] : U'\uFFFD');
    return out;
  }

 private:
  void index() {
    ids_.clear();
    for (std::size_t i = 0; i < chars_.size(); ++i) ids_[chars_[i]] = std::int64_t(i) + 1;
  }
  std::u32string chars_;
  std::map<char32_t, std::int64_t> ids_;
};

/// One batch: x (B, T) and the next ids y (B, T).
struct Batch {
  tapegrad::IndexArray x, y;
};

/// Rows of T + 1 consecutive ids starting at `starts`.
inline Batch windows(const std::vector<std::int64_t>& ids, const std::vector<std::size_t>& starts,
                     std::size_t T) {
  const std::size_t B = starts.size();
  Batch b{tapegrad::IndexArray::from_shape({B, T}), tapegrad::IndexArray::from_shape({B, T})};
  for (std::size_t r = 0; r < B; ++r)
    for (std::size_t t = 0; t < T; ++t) {
      b.x(r, t) = ids[starts[r] + t];
      b.y(r, t) = ids[starts[r] + t + 1];
    }
  return b;
}

/// `count` window starts drawn uniformly from [0, n - T), in order (nanoGPT's torch.randint(len(data) - T)).
inline std::vector<std::size_t> random_starts(std::size_t n, std::size_t T, std::size_t count,
                                              tapegrad::Generator& gen) {
  if (n <= T)
    throw std::runtime_error("a text of " + std::to_string(n) + " characters has no window of " +
                             std::to_string(T + 1) + "; lower --block-size or give more text");
  std::vector<std::size_t> starts(count);
  for (std::size_t& s : starts) s = std::size_t(gen.randint(0, std::int64_t(n - T)));
  return starts;
}

}  // namespace gpt
