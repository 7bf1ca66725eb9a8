// src/data/bpe.cpp: the byte pair encoding (data/bpe.hpp): the reference train and encode, which
// recount every pair after each merge as minbpe does, special tokens, decode with UTF-8 repair,
// and the text file format. The fast train and encode are in bpe_fast.cpp.
#include "tapegrad/data/bpe.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "atomic_save.hpp"
#include "bpe_fast.hpp"
#include "line_reader.hpp"
#include "tapegrad/core/atomic_file.hpp"
#include "tapegrad/core/errors.hpp"
#include "../core/utf8.hpp"

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

/// `text` cut as `pretokenizer` says: GPT-2's pieces, or one piece.
std::vector<std::string_view> pieces_of(std::string_view text, Pretokenizer pretokenizer) {
  if (pretokenizer == Pretokenizer::gpt2) return gpt2_pieces(text);
  if (text.empty()) return {};
  return {text};
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

BytePairEncoding::BytePairEncoding(std::vector<Merge> merges, Pretokenizer pretokenizer)
    : merges_(std::move(merges)), pretokenizer_(pretokenizer) {
  check<ValueError>(merges_.size() <= kMaxVocabSize - 256, "BytePairEncoding: expected at most ",
                    kMaxVocabSize - 256, " merges, got ", merges_.size());
  vocab_.resize(256 + merges_.size());
  for (std::uint32_t b = 0; b < 256; ++b) vocab_[b] = std::string(1, char(b));
  for (std::uint32_t i = 0; i < merges_.size(); ++i) {
    const Merge m = merges_[i];
    if (m.left >= 256 + i || m.right >= 256 + i)
      fail<ValueError>("BytePairEncoding: merge ", i, " (", m.left, ", ", m.right,
                       ") joins an id that no earlier merge defines (it defines id ", 256 + i, ")");
    const auto [it, fresh] = ranks_.emplace(pair_key(m.left, m.right), i);
    if (!fresh)
      fail<ValueError>("BytePairEncoding: merge ", i, " (", m.left, ", ", m.right,
                       ") repeats merge ", it->second);
    vocab_[256 + i] = vocab_[m.left] + vocab_[m.right];
  }
}

void BytePairEncoding::add_special_tokens(const std::vector<std::string>& tokens) {
  check<ValueError>(special_.size() + tokens.size() <= kMaxSpecialTokens,
                    "BytePairEncoding::add_special_tokens: expected at most ", kMaxSpecialTokens,
                    " special tokens, got ", special_.size() + tokens.size());
  check<ValueError>(vocab_size() + tokens.size() <= kMaxVocabSize,
                    "BytePairEncoding::add_special_tokens: expected at most ", kMaxVocabSize,
                    " tokens in all, got ", vocab_size() + tokens.size());
  // All are checked before any is added: a refused list changes nothing.
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const std::string& t = tokens[k];
    const auto refuse = [&](const char* why) {
      fail<ValueError>("BytePairEncoding::add_special_tokens: special token ", k, " \"",
                       t.substr(0, 40), t.size() > 40 ? "...\"" : "\"", " ", why);
    };
    if (t.empty()) refuse("is empty");
    if (t.size() > 256) refuse("is longer than 256 bytes");
    // A line end would end its line of the BPE file ("\r" too, as "\r\n" ends one when read).
    if (t.find_first_of("\r\n") != std::string::npos) refuse("holds a line end (\\n or \\r)");
    if (tapegrad::detail::first_invalid_utf8(t) != std::string_view::npos)
      refuse("is not valid UTF-8");
    if (special_id(t) >= 0) refuse("is already a special token");
    if (std::find(tokens.begin(), tokens.begin() + std::ptrdiff_t(k), t) !=
        tokens.begin() + std::ptrdiff_t(k))
      refuse("is given twice");
  }
  for (const std::string& t : tokens) {
    special_.push_back(t);
    vocab_.push_back(t);
  }
}

std::int64_t BytePairEncoding::special_id(std::string_view text) const {
  for (std::size_t k = 0; k < special_.size(); ++k)
    if (special_[k] == text) return std::int64_t(256 + merges_.size() + k);
  return -1;
}

// ---- special tokens: where the text is cut before the pieces -----------------------------------

template <class Piece>
std::vector<std::uint32_t> BytePairEncoding::encode_with(std::string_view text,
                                                         SpecialTokens special, const char* who,
                                                         const Piece& piece) const {
  check<ValueError>(text.size() < std::numeric_limits<std::uint32_t>::max(), who,
                    ": expected a text shorter than 4 GiB, got ", text.size(), " bytes");
  std::vector<std::uint32_t> out;
  out.reserve(text.size() / 4);  // a token holds about 2 to 4 bytes of text
  const auto ordinary = [&](std::string_view stretch) {
    if (pretokenizer_ == Pretokenizer::gpt2) {
      const std::size_t bad = tapegrad::detail::first_invalid_utf8(stretch);
      if (bad != std::string_view::npos)
        fail<ValueError>(who, ": the text is not valid UTF-8 at byte ",
                         std::size_t(stretch.data() - text.data()) + bad,
                         "; GPT-2's pretokenizer reads characters, so the text must be UTF-8");
    }
    if (pretokenizer_ == Pretokenizer::gpt2)
      for_each_gpt2_piece(stretch, [&](std::string_view p) { piece(p, out); });
    else if (!stretch.empty())
      piece(stretch, out);
  };
  if (special == SpecialTokens::ordinary || special_.empty()) {
    ordinary(text);
    return out;
  }
  // Left to right, the earliest special token; of two starting at one byte, the longest.
  // next[k] is where special token k next occurs at or after `done` (npos: nowhere), so the text
  // is searched once per token and occurrence, not once per token and stretch.
  std::vector<std::size_t> next;
  for (const std::string& token : special_) next.push_back(text.find(token));
  std::size_t done = 0;
  while (done < text.size()) {
    std::size_t at = std::string_view::npos, which = 0;
    for (std::size_t k = 0; k < special_.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < done)
        next[k] = text.find(special_[k], done);
      if (next[k] < at || (next[k] == at && at != std::string_view::npos &&
                           special_[k].size() > special_[which].size()))
        at = next[k], which = k;
    }
    if (at == std::string_view::npos) break;
    if (special == SpecialTokens::refuse)
      fail<ValueError>(who, ": the text holds the special token \"", special_[which], "\" at byte ",
                       at, "; pass SpecialTokens::allow to encode it as its id, or ",
                       "SpecialTokens::ordinary to encode it as text");
    ordinary(text.substr(done, at - done));
    out.push_back(std::uint32_t(256 + merges_.size() + which));
    done = at + special_[which].size();
  }
  ordinary(text.substr(done));
  return out;
}

// ---- the reference: recount every pair, every round -------------------------------------------

BytePairEncoding BytePairEncoding::train_reference(std::string_view text, std::size_t vocab_size,
                                                   Pretokenizer pretokenizer) {
  check_arguments("BytePairEncoding::train_reference", text, vocab_size);
  struct Count {
    std::size_t n = 0, first = 0;  // occurrences, and where the first one is
  };
  std::vector<std::vector<std::uint32_t>> pieces;  // merges never cross from one to the next
  for (const std::string_view piece : pieces_of(text, pretokenizer))
    pieces.push_back(bytes_to_ids(piece));
  std::vector<Merge> merges;
  while (256 + merges.size() < vocab_size) {
    std::map<std::pair<std::uint32_t, std::uint32_t>, Count> counts;
    std::size_t position = 0;  // in the text as merged so far
    for (const std::vector<std::uint32_t>& ids : pieces) {
      for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
        Count& c = counts[{ids[i], ids[i + 1]}];
        if (c.n++ == 0) c.first = position + i;
      }
      position += ids.size();
    }
    if (counts.empty()) break;  // every piece is one token: nothing to merge
    // The most frequent pair; of equally frequent ones, the one seen first.
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second.n > best->second.n ||
          (it->second.n == best->second.n && it->second.first < best->second.first))
        best = it;
    const Merge pair{best->first.first, best->first.second};
    for (std::vector<std::uint32_t>& ids : pieces)
      ids = merge_pair(ids, pair, std::uint32_t(256 + merges.size()));
    merges.push_back(pair);
  }
  return BytePairEncoding(std::move(merges), pretokenizer);
}

namespace {

/// One piece encoded as minbpe's encode does, recounting its pairs after every merge.
std::vector<std::uint32_t> encode_piece_reference(
    std::string_view piece, const std::vector<Merge>& merges,
    const std::unordered_map<std::uint64_t, std::uint32_t>& ranks) {
  std::vector<std::uint32_t> ids = bytes_to_ids(piece);
  while (ids.size() >= 2) {
    // Of the pairs the piece holds, the one merged earliest in training.
    std::uint32_t best = std::numeric_limits<std::uint32_t>::max();
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto it = ranks.find(pair_key(ids[i], ids[i + 1]));
      if (it != ranks.end() && it->second < best) best = it->second;
    }
    if (best == std::numeric_limits<std::uint32_t>::max()) break;  // no pair has a merge
    ids = merge_pair(ids, merges[best], 256 + best);
  }
  return ids;
}

}  // namespace

std::vector<std::uint32_t> BytePairEncoding::encode_reference(std::string_view text,
                                                              SpecialTokens special) const {
  return encode_with(text, special, "BytePairEncoding::encode_reference",
                     [&](std::string_view piece, std::vector<std::uint32_t>& out) {
                       const auto ids = encode_piece_reference(piece, merges_, ranks_);
                       out.insert(out.end(), ids.begin(), ids.end());
                     });
}

// ---- the public train and encode: the fast ones ------------------------------------------------

BytePairEncoding BytePairEncoding::train(std::string_view text, std::size_t vocab_size,
                                         Pretokenizer pretokenizer) {
  check_arguments("BytePairEncoding::train", text, vocab_size);
  return BytePairEncoding(detail::train_fast(pieces_of(text, pretokenizer), vocab_size - 256),
                          pretokenizer);
}

std::vector<std::uint32_t> BytePairEncoding::encode(std::string_view text,
                                                    SpecialTokens special) const {
  if (pretokenizer_ == Pretokenizer::none)
    return encode_with(text, special, "BytePairEncoding::encode",
                       [&](std::string_view piece, std::vector<std::uint32_t>& out) {
                         const auto ids = detail::encode_fast(piece, merges_, ranks_);
                         out.insert(out.end(), ids.begin(), ids.end());
                       });
  // GPT-2's pieces are words, and a text repeats its words: each distinct piece is merged once,
  // its ids kept in `merged` at the place `seen` says.
  std::unordered_map<std::string_view, std::pair<std::uint32_t, std::uint32_t>> seen;
  std::vector<std::uint32_t> merged;
  return encode_with(text, special, "BytePairEncoding::encode",
                     [&](std::string_view piece, std::vector<std::uint32_t>& out) {
                       auto it = seen.find(piece);
                       if (it == seen.end()) {
                         const auto ids = detail::encode_fast(piece, merges_, ranks_);
                         it = seen.emplace(piece, std::pair{std::uint32_t(merged.size()),
                                                            std::uint32_t(ids.size())})
                                  .first;
                         merged.insert(merged.end(), ids.begin(), ids.end());
                       }
                       const auto [at, n] = it->second;
                       out.insert(out.end(), merged.begin() + at, merged.begin() + at + n);
                     });
}

// ---- decode ------------------------------------------------------------------------------------

const std::string& BytePairEncoding::bytes_of(std::uint32_t id) const {
  check<ValueError>(id < vocab_size(), "BytePairEncoding::bytes_of: expected an id in [0, ",
                    vocab_size(), "), got ", id);
  return vocab_[id];
}

std::string BytePairEncoding::decode(const std::vector<std::uint32_t>& ids) const {
  std::string bytes;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab_size())
      fail<ValueError>("BytePairEncoding::decode: expected ids in [0, ", vocab_size(), "), got ",
                       ids[i], " at position ", i);
    bytes += vocab_[ids[i]];
  }
  return tapegrad::detail::repair_utf8(bytes);
}

// ---- the file ----------------------------------------------------------------------------------

namespace {

constexpr std::string_view kHeader = "tapegrad-bpe 1";

// A save through a symbolic link replaces only a BPE model (or an empty file) there: one that
// starts with the header line (ended by "\n", or "\r\n" as an editor may have saved it).
bool is_bpe_start(std::string_view first_bytes, std::uint64_t) {
  return first_bytes.starts_with(kHeader) && first_bytes.size() > kHeader.size() &&
         (first_bytes[kHeader.size()] == '\n' || first_bytes[kHeader.size()] == '\r');
}
constexpr FileFormat kBpeFormat{"a BPE model (\"tapegrad-bpe 1\")", is_bpe_start};

using detail::excerpt;

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

}  // namespace

std::string BytePairEncoding::to_text() const {
  std::ostringstream out;
  out << kHeader << "\nvocab_size " << vocab_size() << "\npretokenizer "
      << (pretokenizer_ == Pretokenizer::gpt2 ? "gpt2" : "none") << '\n';
  for (const Merge& m : merges_) out << m.left << ' ' << m.right << '\n';
  for (const std::string& token : special_) out << "special " << token << '\n';
  return out.str();
}

void BytePairEncoding::save(const std::string& path) const {
  detail::as_data_error(
      [&] { AtomicFile::write_whole(path, to_text(), "BytePairEncoding::save", &kBpeFormat); });
}

BytePairEncoding BytePairEncoding::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check<DataError>(bool(in), "BytePairEncoding::load: cannot open ", path);
  return read(in, path);
}

BytePairEncoding BytePairEncoding::from_text(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  return read(in, source);
}

BytePairEncoding BytePairEncoding::read(std::istream& in, const std::string& path) {
  detail::LineReader lines(in, path, "BytePairEncoding::load");
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

  if (!lines.next(line) || (line != "pretokenizer none" && line != "pretokenizer gpt2"))
    bad("expected \"pretokenizer none\" or \"pretokenizer gpt2\", got ", excerpt(line));
  const Pretokenizer pretokenizer =
      line == "pretokenizer gpt2" ? Pretokenizer::gpt2 : Pretokenizer::none;

  std::vector<Merge> merges;
  std::vector<std::string> special;
  std::unordered_map<std::uint64_t, std::size_t> seen;  // pair -> its line
  std::vector<std::uint64_t> token_length(256, 1);      // id -> its bytes
  std::uint64_t total_bytes = 256;
  while (lines.next(line)) {
    if (256 + merges.size() + special.size() == vocab_size)
      bad("expected ", vocab_size - 256, " merges and special tokens (vocab_size ", vocab_size,
          " on line 2), got more");
    if (line.rfind("special ", 0) == 0) {
      if (special.size() == kMaxSpecialTokens)
        bad("expected at most ", kMaxSpecialTokens, " special tokens, got more");
      std::string token = line.substr(8);
      if (token.empty() || token.size() > 256 || token.find('\r') != std::string::npos ||
          tapegrad::detail::first_invalid_utf8(token) != std::string_view::npos)
        bad("expected a special token of 1 to 256 bytes of UTF-8 without a line end, got ",
            excerpt(token));
      for (std::size_t k = 0; k < special.size(); ++k)
        if (special[k] == token)
          bad("the special token ", excerpt(token), " is already on line ",
              lines.number - special.size() + k);
      special.push_back(std::move(token));
      continue;
    }
    if (!special.empty())
      bad("expected \"special TEXT\" (merges come before the special tokens), got ", excerpt(line));
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
    // A merge's token is its two parts joined: a file that doubles one token a line would ask
    // for 2^40 bytes within 40 lines. The lengths are summed before anything is joined.
    const std::uint64_t length = token_length[left] + token_length[right];
    total_bytes += length;
    if (length > kMaxTokenBytes || total_bytes > kMaxVocabBytes)
      bad("the merge makes a token of ", length, " bytes (the file's tokens hold ", total_bytes,
          " bytes so far); a BPE file's tokens may hold at most ", kMaxTokenBytes,
          " bytes each and ", kMaxVocabBytes, " in all");
    token_length.push_back(length);
    merges.push_back({std::uint32_t(left), std::uint32_t(right)});
  }
  if (256 + merges.size() + special.size() != vocab_size)
    damaged(path, lines.number + 1, "expected ", vocab_size - 256,
            " merges and special tokens (vocab_size ", vocab_size, " on line 2), got ",
            merges.size() + special.size(), " before the end of the file");
  BytePairEncoding bpe(std::move(merges), pretokenizer);
  bpe.add_special_tokens(special);
  return bpe;
}

}  // namespace tapegrad::data
