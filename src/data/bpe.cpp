// src/data/bpe.cpp: the byte pair encoding (data/bpe.hpp): the reference train and encode, which
// recount every pair after each merge as minbpe does, decode with UTF-8 repair, and the text file
// format. The fast train and encode are in bpe_fast.cpp.
#include "tapegrad/data/bpe.hpp"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include <unistd.h>

#include "bpe_fast.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::data {

namespace {

using detail::pair_key;
using Merge = BytePairEncoding::Merge;

void check_arguments(const char* where, std::string_view text, std::size_t vocab_size) {
  check<ValueError>(vocab_size >= 256 && vocab_size <= BytePairEncoding::kMaxVocabSize, where,
                    ": expected vocab_size in [256, ", BytePairEncoding::kMaxVocabSize, "], got ",
                    vocab_size);
  check<ValueError>(text.size() < std::numeric_limits<std::uint32_t>::max(), where,
                    ": expected a text shorter than 4 GiB, got ", text.size(), " bytes");
}

std::vector<std::uint32_t> bytes_to_ids(std::string_view text) {
  std::vector<std::uint32_t> ids(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

/// `ids` with every occurrence of `pair`, left to right, replaced by `id` (minbpe's merge).
std::vector<std::uint32_t> merge_pair(const std::vector<std::uint32_t>& ids, Merge pair,
                                      std::uint32_t id) {
  std::vector<std::uint32_t> out;
  out.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == pair.left && ids[i + 1] == pair.right) {
      out.push_back(id);
      ++i;
    } else {
      out.push_back(ids[i]);
    }
  }
  return out;
}

}  // namespace

BytePairEncoding::BytePairEncoding(std::vector<Merge> merges) : merges_(std::move(merges)) {
  vocab_.resize(vocab_size());
  for (std::uint32_t b = 0; b < 256; ++b) vocab_[b] = std::string(1, char(b));
  for (std::uint32_t i = 0; i < merges_.size(); ++i) {
    ranks_.emplace(pair_key(merges_[i].left, merges_[i].right), i);
    vocab_[256 + i] = vocab_[merges_[i].left] + vocab_[merges_[i].right];
  }
}

// ---- the reference: recount every pair, every round -------------------------------------------

BytePairEncoding BytePairEncoding::train_reference(std::string_view text, std::size_t vocab_size) {
  check_arguments("BytePairEncoding::train_reference", text, vocab_size);
  struct Count {
    std::size_t n = 0, first = 0;  // occurrences, and where the first one is
  };
  std::vector<std::uint32_t> ids = bytes_to_ids(text);
  std::vector<Merge> merges;
  while (256 + merges.size() < vocab_size) {
    std::map<std::pair<std::uint32_t, std::uint32_t>, Count> counts;
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      Count& c = counts[{ids[i], ids[i + 1]}];
      if (c.n++ == 0) c.first = i;
    }
    if (counts.empty()) break;  // one token left: nothing to merge
    // The most frequent pair; of equally frequent ones, the one seen first.
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second.n > best->second.n ||
          (it->second.n == best->second.n && it->second.first < best->second.first))
        best = it;
    const Merge pair{best->first.first, best->first.second};
    ids = merge_pair(ids, pair, std::uint32_t(256 + merges.size()));
    merges.push_back(pair);
  }
  return BytePairEncoding(std::move(merges));
}

std::vector<std::uint32_t> BytePairEncoding::encode_reference(std::string_view text) const {
  check<ValueError>(text.size() < std::numeric_limits<std::uint32_t>::max(),
                    "BytePairEncoding::encode_reference: expected a text shorter than 4 GiB, got ",
                    text.size(), " bytes");
  std::vector<std::uint32_t> ids = bytes_to_ids(text);
  while (ids.size() >= 2) {
    // Of the pairs the text holds, the one merged earliest in training.
    std::uint32_t best = std::numeric_limits<std::uint32_t>::max();
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto it = ranks_.find(pair_key(ids[i], ids[i + 1]));
      if (it != ranks_.end() && it->second < best) best = it->second;
    }
    if (best == std::numeric_limits<std::uint32_t>::max()) break;  // no pair has a merge
    ids = merge_pair(ids, merges_[best], 256 + best);
  }
  return ids;
}

// ---- the public train and encode: the fast ones ------------------------------------------------

BytePairEncoding BytePairEncoding::train(std::string_view text, std::size_t vocab_size) {
  check_arguments("BytePairEncoding::train", text, vocab_size);
  return BytePairEncoding(detail::train_fast(text, vocab_size - 256));
}

std::vector<std::uint32_t> BytePairEncoding::encode(std::string_view text) const {
  check<ValueError>(text.size() < std::numeric_limits<std::uint32_t>::max(),
                    "BytePairEncoding::encode: expected a text shorter than 4 GiB, got ",
                    text.size(), " bytes");
  return detail::encode_fast(text, merges_, ranks_);
}

// ---- decode ------------------------------------------------------------------------------------

const std::string& BytePairEncoding::bytes_of(std::uint32_t id) const {
  check<ValueError>(id < vocab_size(), "BytePairEncoding::bytes_of: expected an id in [0, ",
                    vocab_size(), "), got ", id);
  return vocab_[id];
}

namespace {

/// `bytes` with each maximal subpart of an ill-formed UTF-8 sequence replaced by U+FFFD (Unicode
/// 3.9, "U+FFFD Substitution of Maximal Subparts"; what Python's errors="replace" does). The
/// table gives, for a lead byte, the sequence's length and the range its second byte must be in
/// (Unicode's Table 3-7); later bytes are 80..BF.
std::string repair_utf8(const std::string& bytes) {
  static constexpr const char* kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(bytes.size());
  const std::size_t n = bytes.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char lead = static_cast<unsigned char>(bytes[i]);
    std::size_t length = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (lead < 0x80)
      length = 1;
    else if (lead >= 0xC2 && lead <= 0xDF)
      length = 2;
    else if (lead == 0xE0)
      length = 3, lo = 0xA0;
    else if (lead == 0xED)
      length = 3, hi = 0x9F;  // not the surrogates D800..DFFF
    else if (lead >= 0xE1 && lead <= 0xEF)
      length = 3;
    else if (lead == 0xF0)
      length = 4, lo = 0x90;
    else if (lead == 0xF4)
      length = 4, hi = 0x8F;  // not above U+10FFFF
    else if (lead >= 0xF1 && lead <= 0xF3)
      length = 4;
    if (length == 0) {  // 80..C1 or F5..FF: never a lead byte
      out += kReplacement;
      ++i;
      continue;
    }
    std::size_t k = 1;  // bytes of the sequence found so far
    for (; k < length && i + k < n; ++k) {
      const unsigned char c = static_cast<unsigned char>(bytes[i + k]);
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
    }
    if (k == length)
      out.append(bytes, i, length);
    else
      out += kReplacement;  // the k bytes that began a sequence: one U+FFFD
    i += k;
  }
  return out;
}

}  // namespace

std::string BytePairEncoding::decode(const std::vector<std::uint32_t>& ids) const {
  std::string bytes;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab_size())
      fail<ValueError>("BytePairEncoding::decode: expected ids in [0, ", vocab_size(), "), got ",
                       ids[i], " at position ", i);
    bytes += vocab_[ids[i]];
  }
  return repair_utf8(bytes);
}

// ---- the file ----------------------------------------------------------------------------------

namespace {

constexpr std::string_view kHeader = "tapegrad-bpe 1";
constexpr std::size_t kMaxLine = std::size_t(1) << 20;

/// A line as a message quotes it: at most 40 bytes, control bytes as '?'.
std::string excerpt(std::string_view line) {
  std::string s(line.substr(0, 40));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return "\"" + s + (line.size() > 40 ? "...\"" : "\"");
}

/// A decimal number filling all of `s`, or false.
bool parse_number(std::string_view s, std::uint64_t& value) {
  if (s.empty() || s.size() > 10) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size();
}

/// Throws the DataError of a damaged file: "BytePairEncoding::load: <path> line <n>: <parts>".
template <class... Parts>
[[noreturn]] void damaged(const std::string& path, std::size_t line, const Parts&... parts) {
  fail<DataError>("BytePairEncoding::load: ", path, " line ", line, ": ", parts...);
}

/// The lines of a file, read one at a time, none longer than kMaxLine.
class LineReader {
 public:
  LineReader(std::istream& in, const std::string& path) : in_(in), path_(path) {}
  /// The next line without its "\n"; false at the end of the file.
  bool next(std::string& line) {
    line.clear();
    std::streambuf* buf = in_.rdbuf();
    int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) return false;
    ++number;
    for (; c != std::char_traits<char>::eof() && c != '\n'; c = buf->sbumpc()) {
      if (line.size() == kMaxLine)
        fail<DataError>("BytePairEncoding::load: ", path_, " line ", number,
                        ": expected a line of at most 1 MiB, got a longer one");
      line += char(c);
    }
    return true;
  }
  std::size_t number = 0;  ///< of the line last read, from 1

 private:
  std::istream& in_;
  const std::string& path_;
};

}  // namespace

void BytePairEncoding::save(const std::string& path) const {
  namespace fs = std::filesystem;
  const fs::path target(path);
  // The temporary is in the target's folder (so rename() cannot cross file systems) and named
  // by the process, so two processes saving to one folder do not share it.
  const fs::path temp = target.parent_path() /
                        ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    check<DataError>(bool(out), "BytePairEncoding::save: cannot write ", temp.string());
    out << kHeader << "\nvocab_size " << vocab_size() << "\n";
    for (const Merge& m : merges_) out << m.left << ' ' << m.right << '\n';
    out.flush();
    if (!out) {
      out.close();
      std::error_code ignored;
      fs::remove(temp, ignored);
      fail<DataError>("BytePairEncoding::save: cannot write ", temp.string());
    }
  }
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    fail<DataError>("BytePairEncoding::save: cannot replace ", path, ": ", ec.message());
  }
}

BytePairEncoding BytePairEncoding::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check<DataError>(bool(in), "BytePairEncoding::load: cannot open ", path);
  LineReader lines(in, path);
  std::string line;
  const auto bad = [&](const auto&... parts) { damaged(path, lines.number, parts...); };

  if (!lines.next(line) || line != kHeader)
    bad("expected the header \"", kHeader, "\", got ", excerpt(line));
  std::uint64_t vocab_size = 0;
  if (!lines.next(line) || line.rfind("vocab_size ", 0) != 0 ||
      !parse_number(std::string_view(line).substr(11), vocab_size))
    bad("expected \"vocab_size N\", got ", excerpt(line));
  if (vocab_size < 256 || vocab_size > kMaxVocabSize)
    bad("expected vocab_size in [256, ", kMaxVocabSize, "], got ", vocab_size);

  std::vector<Merge> merges;
  std::unordered_map<std::uint64_t, std::size_t> seen;  // pair -> its line
  while (lines.next(line)) {
    if (merges.size() == vocab_size - 256)
      bad("expected ", vocab_size - 256, " merges (vocab_size ", vocab_size,
          " on line 2), got more");
    const std::size_t space = line.find(' ');
    std::uint64_t left = 0, right = 0;
    if (space == std::string::npos ||
        !parse_number(std::string_view(line).substr(0, space), left) ||
        !parse_number(std::string_view(line).substr(space + 1), right))
      bad("expected a merge \"left right\" of two ids, got ", excerpt(line));
    const std::uint64_t defined = 256 + merges.size();  // ids 0 .. defined - 1 exist
    if (left >= defined || right >= defined)
      bad("expected ids below ", defined, " (the merge defines id ", defined, "), got ",
          left >= defined ? left : right);
    const auto [it, fresh] =
        seen.emplace(pair_key(std::uint32_t(left), std::uint32_t(right)), lines.number);
    if (!fresh) bad("the merge ", left, " ", right, " is already on line ", it->second);
    merges.push_back({std::uint32_t(left), std::uint32_t(right)});
  }
  if (merges.size() != vocab_size - 256)
    damaged(path, lines.number + 1, "expected ", vocab_size - 256, " merges (vocab_size ",
            vocab_size, " on line 2), got ", merges.size(), " before the end of the file");
  return BytePairEncoding(std::move(merges));
}

}  // namespace tapegrad::data
