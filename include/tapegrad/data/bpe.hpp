// include/tapegrad/data/bpe.hpp: a byte-level byte pair encoding (BPE), text <-> token ids, with
// the semantics of minbpe's BasicTokenizer (github.com/karpathy/minbpe).
//
// Ids 0 .. 255 are the 256 bytes; training adds one id per merge: merge i joins the pair
// (left, right) into id 256 + i. Any byte string encodes (there is no <unk>), and decode gives the
// bytes back, with invalid UTF-8 shown as U+FFFD.
//
// Two implementations side by side, as the kernels have: train_reference/encode_reference recount
// everything each round, as minbpe does, and are the ones to read; train/encode touch only what a
// merge changes, and are the ones to use. Both give the same merges and ids (tests/data/test_bpe.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tapegrad::data {

class BytePairEncoding {
 public:
  /// Merge i joins `left` then `right` into id 256 + i.
  struct Merge {
    std::uint32_t left, right;
    bool operator==(const Merge&) const = default;
  };
  static constexpr std::size_t kMaxVocabSize = std::size_t(1) << 20;

  BytePairEncoding() : BytePairEncoding(std::vector<Merge>{}) {}  ///< the 256 bytes, no merges

  /// Learns vocab_size - 256 merges from the bytes of `text`. Each round merges the most frequent
  /// adjacent pair (overlapping occurrences count: "aaa" holds (a, a) twice); a tie goes to the
  /// pair whose first occurrence comes first in the text as merged so far (minbpe: Python's max()
  /// over a dict filled in text order). Occurrences are replaced left to right, so "aaa" becomes
  /// (aa, a). Like minbpe, a pair seen once is still merged; training stops early only when no
  /// pair is left (the text is one token), so vocab_size() may be below `vocab_size`.
  /// ValueError for vocab_size outside [256, 2^20] or a text of 4 GiB or more.
  static BytePairEncoding train(std::string_view text, std::size_t vocab_size);
  /// The same merges as train(), recounting every pair each round: O(text * merges).
  static BytePairEncoding train_reference(std::string_view text, std::size_t vocab_size);

  /// The bytes of `text` with the merges applied as minbpe's encode does: while some adjacent
  /// pair has a merge, the pair with the lowest merge index is replaced everywhere, left to right.
  std::vector<std::uint32_t> encode(std::string_view text) const;
  /// The same ids as encode(), recounting the text's pairs after every merge.
  std::vector<std::uint32_t> encode_reference(std::string_view text) const;

  /// The tokens' bytes as text: invalid UTF-8 is replaced as Python's
  /// bytes.decode("utf-8", errors="replace") does, one U+FFFD for each maximal subpart of an
  /// ill-formed sequence (the longest prefix of a valid sequence, else one byte): "\xe2\x82" is one
  /// U+FFFD, "\xff\xfe" two. An id outside [0, vocab_size()) is a ValueError naming it and its
  /// position.
  std::string decode(const std::vector<std::uint32_t>& ids) const;

  std::size_t vocab_size() const { return 256 + merges_.size(); }
  const std::vector<Merge>& merges() const { return merges_; }
  /// The bytes token `id` stands for. ValueError unless id < vocab_size().
  const std::string& bytes_of(std::uint32_t id) const;

  /// Writes a text file, replacing `path` atomically (a temporary in the same folder, renamed):
  ///     tapegrad-bpe 1
  ///     vocab_size N
  ///     left right            one line per merge, in order: line k + 3 defines id 256 + k
  /// DataError naming the file when it cannot be written.
  void save(const std::string& path) const;
  /// Reads what save() wrote. A damaged file (a bad header, a number that is not one, a merge of
  /// an id not defined before it, a merge given twice, a count other than N - 256, a line over
  /// 1 MiB) is a DataError naming the file and the line.
  static BytePairEncoding load(const std::string& path);

 private:
  explicit BytePairEncoding(std::vector<Merge> merges);
  std::vector<Merge> merges_;
  std::unordered_map<std::uint64_t, std::uint32_t> ranks_;  ///< pair key -> merge index
  std::vector<std::string> vocab_;                          ///< id -> its bytes
};

}  // namespace tapegrad::data
