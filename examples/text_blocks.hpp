// examples/text_blocks.hpp: how examples/tokenize encodes a text of any size in a few blocks'
// memory, with the ids of the whole text at once. A text is cut where a cut cannot change the ids
// (Cuts), read a block at a time (TextFile, for_each_block), and a BPE without pretokenizer
// encodes each distinct piece between two cuts once (PieceCache). tests/examples/test_tokenize_blocks.cpp
// checks the ids against BytePairEncoding::encode of the whole text, with blocks of a few bytes.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/data/bpe.hpp>
#include <tapegrad/data/pretokenize.hpp>

namespace tokenize {

using tapegrad::data::BytePairEncoding;
using tapegrad::data::Pretokenizer;
using tapegrad::data::SpecialTokens;

/// Where a text may be cut into blocks that encode, one after the other, to the ids of the whole
/// text: what lets a text of any size be encoded a few megabytes at a time.
///   - GPT-2's pieces (GPT-2's tokenizer, a BPE trained with --pretokenizer gpt2): before a line
///     end ("\n" or "\r\n") that follows a character other than a space, where GPT-2's pattern
///     always ends a piece (data::gpt2_piece_ends_before). A special token holds no line end.
///   - A BPE without pretokenizer, whose merges may cross spaces and lines: between two bytes
///     that no token (special tokens included) holds side by side. A token that spanned the cut
///     would hold them, so no merge ever joins the two sides: each side merges as it would alone.
class Cuts {
 public:
  static Cuts gpt2_pieces() { return Cuts(); }
  static Cuts between_bytes(const BytePairEncoding& bpe) {
    Cuts c;
    c.held_.assign(256 * 256, false);
    for (std::size_t id = 256; id < bpe.vocab_size(); ++id) {
      const std::string& t = bpe.bytes_of(std::uint32_t(id));
      for (std::size_t k = 1; k < t.size(); ++k) c.held_[pair(t, k)] = true;
    }
    return c;
  }

  bool between_bytes() const { return !held_.empty(); }
  /// Whether a BPE without pretokenizer may cut `text` before byte `at` (0 < at < size).
  bool between_bytes_before(std::string_view text, std::size_t at) const {
    return !held_[pair(text, at)];
  }

  /// The last place in [from, text.size()) before which `text` may be cut (never 0), or 0.
  std::size_t last(std::string_view text, std::size_t from) const {
    from = std::max<std::size_t>(from, 1);
    if (between_bytes()) {
      for (std::size_t at = text.size(); at-- > from;)
        if (between_bytes_before(text, at)) return at;
      return 0;
    }
    for (std::size_t nl = text.size(); nl > from;) {
      nl = text.rfind('\n', nl - 1);
      if (nl == std::string_view::npos || nl < from) break;
      const std::size_t cut = text[nl - 1] == '\r' ? nl - 1 : nl;
      if (cut >= from && tapegrad::data::gpt2_piece_ends_before(text, cut)) return cut;
    }
    return 0;
  }

  /// Where this rule cuts, for a message.
  std::string rule() const {
    return between_bytes() ? "two bytes side by side that no token of the model holds together"
                           : "a line end after a character other than a space";
  }

 private:
  static std::size_t pair(std::string_view text, std::size_t at) {
    return static_cast<unsigned char>(text[at - 1]) * 256 + static_cast<unsigned char>(text[at]);
  }
  std::vector<bool> held_;  ///< 256 x 256: bytes (a, b) lie side by side in a token; empty: GPT-2
};

/// The ids of a text for a BPE without pretokenizer, found piece by piece: the text is cut
/// wherever Cuts allows, and each distinct piece is encoded once and remembered. The ids are
/// those of the whole text (Cuts' rule), and a text repeats its words: BytePairEncoding::encode
/// of a whole block keeps a heap of every place a merge may apply, 17 s for 50 MB of the
/// fortunes, and this takes 1.3 s. (GPT-2's pieces need no cache here: BytePairEncoding::encode
/// keeps one.) The cache holds at most kMaxBytes; a piece longer than kMaxPieceBytes (a text with
/// few places to cut) is encoded without it.
class PieceCache {
 public:
  explicit PieceCache(Cuts cuts) : cuts_(std::move(cuts)) {}

  /// Appends the ids of `text` to `out`; `encode_piece(piece)` gives a piece's ids (one
  /// SpecialTokens mode for the cache's whole life: it is not part of the key).
  template <class Encode>
  void encode(std::string_view text, const Encode& encode_piece, std::vector<std::uint32_t>& out) {
    for (std::size_t start = 0, at = 1; start < text.size(); ++at) {
      if (at < text.size() && !cuts_.between_bytes_before(text, at)) continue;
      const std::string_view piece = text.substr(start, at - start);
      start = at;
      if (piece.size() > kMaxPieceBytes) {
        const std::vector<std::uint32_t> ids = encode_piece(piece);
        out.insert(out.end(), ids.begin(), ids.end());
        continue;
      }
      auto it = seen_.find(piece);
      if (it == seen_.end()) {
        const std::vector<std::uint32_t> ids = encode_piece(piece);
        bytes_ +=
            piece.size() + 4 * ids.size() + 64;  // (64: the map's node and the deque's string)
        if (bytes_ > kMaxBytes) clear();         // a text that hardly repeats: memory stays bounded
        const std::string_view key = pieces_.emplace_back(piece);  // (a deque: it stays put)
        it = seen_.emplace(key, std::pair{ids_.size(), ids.size()}).first;
        ids_.insert(ids_.end(), ids.begin(), ids.end());
      }
      const auto [from, n] = it->second;
      out.insert(out.end(), ids_.begin() + std::ptrdiff_t(from),
                 ids_.begin() + std::ptrdiff_t(from + n));
    }
  }

 private:
  static constexpr std::size_t kMaxBytes = std::size_t(64) << 20, kMaxPieceBytes = 4096;
  void clear() {
    seen_.clear();
    pieces_.clear();
    ids_.clear();
    bytes_ = 0;
  }

  Cuts cuts_;
  std::deque<std::string> pieces_;  ///< the keys' bytes
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> seen_;  ///< -> ids_
  std::vector<std::uint32_t> ids_;
  std::size_t bytes_ = 0;  ///< about what the cache holds
};

/// `bpe`'s encode, through a PieceCache when it has no pretokenizer.
inline std::function<std::vector<std::uint32_t>(std::string_view, SpecialTokens)> cached_encode(
    std::shared_ptr<const BytePairEncoding> bpe) {
  if (bpe->pretokenizer() == Pretokenizer::gpt2)
    return
        [bpe](std::string_view text, SpecialTokens special) { return bpe->encode(text, special); };
  auto cache = std::make_shared<PieceCache>(Cuts::between_bytes(*bpe));
  return [bpe, cache](std::string_view text, SpecialTokens special) {
    std::vector<std::uint32_t> ids;
    cache->encode(
        text, [&](std::string_view piece) { return bpe->encode(piece, special); }, ids);
    return ids;
  };
}

/// A text file (--text), read a piece at a time. It is opened without waiting (a FIFO put at the
/// name since it was checked would block an ordinary open for ever) and checked once more, on the
/// open file, to be a regular file. A file that ends before the size it had when opened was cut while
/// it was read: a DataError, rather than the ids of a part of it.
class TextFile {
 public:
  TextFile(const std::string& flag, const std::string& path) : flag_(flag), path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0)
      throw tapegrad::DataError(flag + ": cannot read '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw tapegrad::DataError(flag + ": '" + path +
                                "' is not a regular file (a FIFO, a device or a " + "socket); " +
                                flag + " expects a file");
    }
    size_ = std::uintmax_t(st.st_size);
  }
  ~TextFile() { ::close(fd_); }
  TextFile(const TextFile&) = delete;
  TextFile& operator=(const TextFile&) = delete;

  /// Appends up to `n` bytes of the file to `to`; false at its end.
  bool read_into(std::string& to, std::size_t n) {
    const std::size_t had = to.size();
    to.resize(had + n);
    ssize_t got = 0;
    do got = ::read(fd_, to.data() + had, n);
    while (got < 0 && errno == EINTR);
    if (got < 0)
      throw tapegrad::DataError(flag_ + ": cannot read '" + path_ + "': " + std::strerror(errno));
    to.resize(had + std::size_t(got));
    read_ += std::uintmax_t(got);
    if (got == 0 && read_ < size_)
      throw tapegrad::DataError(flag_ + ": '" + path_ + "' ended at byte " + std::to_string(read_) +
                                " while it was read, though it held " + std::to_string(size_) +
                                " bytes when opened: it was cut meanwhile (nothing was written)");
    return got > 0;
  }

 private:
  std::string flag_, path_;
  int fd_ = -1;
  std::uintmax_t size_ = 0, read_ = 0;  ///< the size when opened, the bytes read so far
};

/// Calls `block(text, offset)` on consecutive blocks of a text, each cut where `cuts` allows, so
/// that encoding them one after the other gives the ids of the whole text. `more(carry, n)`
/// appends up to n more bytes of the text to `carry`, false at its end. A block holds about
/// `block_bytes`, more when no cut comes sooner, and at most `max_block`: beyond that, a
/// DataError that starts with `what` (the flag and the file).
inline void for_each_block(const std::function<bool(std::string&, std::size_t)>& more,
                           const Cuts& cuts, std::size_t block_bytes, std::uintmax_t max_block,
                           const std::string& what,
                           const std::function<void(std::string_view, std::uintmax_t)>& block) {
  const std::size_t step = std::size_t(
      std::max<std::uintmax_t>(1, std::min<std::uintmax_t>(block_bytes, max_block / 2)));
  std::string carry;
  std::uintmax_t offset = 0;
  std::size_t searched = 0;  // carry[0, searched) holds no cut
  while (more(carry, step)) {
    const std::size_t cut = cuts.last(carry, searched > 0 ? searched - 1 : 0);
    if (cut == 0) {
      searched = carry.size();
      if (carry.size() > max_block)
        throw tapegrad::DataError(
            what + " has no place to cut it into blocks (" + cuts.rule() + ") in the " +
            std::to_string(carry.size() >> 20) + " MiB from byte " + std::to_string(offset) +
            ", more than the " + std::to_string(max_block >> 20) +
            " MiB this program encodes at once in the memory this machine gives it");
      continue;  // read on: the next part may hold one
    }
    block(std::string_view(carry).substr(0, cut), offset);
    offset += cut;
    carry.erase(0, cut);
    searched = 0;
  }
  block(carry, offset);
}

}  // namespace tokenize
