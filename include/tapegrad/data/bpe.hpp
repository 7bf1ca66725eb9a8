// include/tapegrad/data/bpe.hpp: a byte-level byte pair encoding (BPE), text <-> token ids, with
// the semantics of minbpe (github.com/karpathy/minbpe): its BasicTokenizer with Pretokenizer::none, its
// RegexTokenizer with Pretokenizer::gpt2.
//
// Ids 0 .. 255 are the 256 bytes; training adds one id per merge: merge i joins the pair
// (left, right) into id 256 + i. Special tokens, if any, come last. Any byte string encodes (there
// is no <unk>), and decode gives the bytes back, with invalid UTF-8 shown as U+FFFD. A BPE works
// on bytes, not characters: a text to train on or encode may hold any bytes with Pretokenizer::none; Pretokenizer::gpt2 reads characters, and refuses text that is not UTF-8.
//
// Two implementations side by side, as the kernels have: train_reference/encode_reference recount
// everything each round, as minbpe does, and are the ones to read; train/encode touch only what a
// merge changes, and are the ones to use. Both give the same merges and ids (tests/data/test_bpe.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tapegrad/data/pretokenize.hpp"

namespace tapegrad::data {

class BytePairEncoding {
 public:
  /// Merge i joins `left` then `right` into id 256 + i.
  struct Merge {
    std::uint32_t left, right;
    bool operator==(const Merge&) const = default;
  };
  static constexpr std::size_t kMaxVocabSize = std::size_t(1) << 20;
  static constexpr std::size_t kMaxSpecialTokens = 1024;
  /// What load() accepts: a token of at most 1 MiB, tokens of at most 256 MiB in all.
  static constexpr std::uint64_t kMaxTokenBytes = std::uint64_t(1) << 20;
  static constexpr std::uint64_t kMaxVocabBytes = std::uint64_t(256) << 20;

  BytePairEncoding() : BytePairEncoding(std::vector<Merge>{}) {}  ///< the 256 bytes, no merges
  /// A BPE from merges learned elsewhere (GPT-2's, say). ValueError naming the merge if one
  /// joins an id not defined before it, or repeats an earlier merge; or if there are more than
  /// kMaxVocabSize - 256.
  explicit BytePairEncoding(std::vector<Merge> merges,
                            Pretokenizer pretokenizer = Pretokenizer::none);

  /// Learns vocab_size - 256 merges from the bytes of `text`. Each round merges the most frequent
  /// adjacent pair (overlapping occurrences count: "aaa" holds (a, a) twice); a tie goes to the
  /// pair whose first occurrence comes first in the text as merged so far (minbpe: Python's max()
  /// over a dict filled in text order). Occurrences are replaced left to right, so "aaa" becomes
  /// (aa, a). Like minbpe, a pair seen once is still merged; training stops early only when no
  /// pair is left, so vocab_size() may be below `vocab_size`. With Pretokenizer::gpt2, pairs are counted
  /// within gpt2_pieces() only. ValueError for vocab_size outside [256, 2^20], a text of 4 GiB or
  /// more, or (Pretokenizer::gpt2) a text that is not UTF-8, naming the byte offset.
  static BytePairEncoding train(std::string_view text, std::size_t vocab_size,
                                Pretokenizer pretokenizer = Pretokenizer::none);
  /// The same merges as train(), recounting every pair each round: O(text * merges).
  static BytePairEncoding train_reference(std::string_view text, std::size_t vocab_size,
                                          Pretokenizer pretokenizer = Pretokenizer::none);

  /// Adds special tokens, such as "<|endoftext|>", as the ids vocab_size(), vocab_size() + 1, ...
  /// encode() finds their text according to its SpecialTokens argument; training never makes them.
  /// ValueError for an empty token, one with a line end ("\n" or "\r"), over 256 bytes or not
  /// UTF-8, one given
  /// twice or one already there, or more than kMaxSpecialTokens in all.
  void add_special_tokens(const std::vector<std::string>& tokens);

  /// `text` as ids: cut at the special tokens (as `special` says) and into pieces (as pretokenizer()
  /// says), and within each piece the merges applied as minbpe's encode does: while some adjacent
  /// pair has a merge, the pair with the lowest merge index is replaced everywhere, left to right.
  /// ValueError naming the byte offset for a special token's text with SpecialTokens::refuse, or,
  /// with Pretokenizer::gpt2, for invalid UTF-8.
  std::vector<std::uint32_t> encode(std::string_view text,
                                    SpecialTokens special = SpecialTokens::refuse) const;
  /// The same ids as encode(), recounting the pairs after every merge.
  std::vector<std::uint32_t> encode_reference(std::string_view text,
                                              SpecialTokens special = SpecialTokens::refuse) const;

  /// The tokens' bytes as text: invalid UTF-8 is replaced as Python's
  /// bytes.decode("utf-8", errors="replace") does, one U+FFFD for each maximal subpart of an
  /// ill-formed sequence (the longest prefix of a valid sequence, else one byte): "\xe2\x82" is one
  /// U+FFFD, "\xff\xfe" two. An id outside [0, vocab_size()) is a ValueError naming it and its
  /// position.
  std::string decode(const std::vector<std::uint32_t>& ids) const;

  /// 256 + merges + special tokens.
  std::size_t vocab_size() const { return vocab_.size(); }
  const std::vector<Merge>& merges() const { return merges_; }
  Pretokenizer pretokenizer() const { return pretokenizer_; }
  /// The special tokens' texts, in id order: the first is id 256 + merges().size().
  const std::vector<std::string>& special_tokens() const { return special_; }
  /// The id of special token `text`, or -1.
  std::int64_t special_id(std::string_view text) const;
  /// The bytes token `id` stands for (a special token's text for one). ValueError unless
  /// id < vocab_size().
  const std::string& bytes_of(std::uint32_t id) const;

  /// Writes a text file, replacing `path` atomically through the library's one writer
  /// (tapegrad/core/atomic_file.hpp: an exclusive temporary in the same folder, renamed; a
  /// symbolic link is followed only to a BPE model or an empty file):
  ///     tapegrad-bpe 1
  ///     vocab_size N          256 + merges + special tokens
  ///     pretokenizer none     or gpt2
  ///     left right            one line per merge, in order: the k-th defines id 256 + k
  ///     special TEXT          one line per special token, in id order, after the merges
  /// DataError naming the file and the reason when it cannot be written.
  void save(const std::string& path) const;
  /// Reads what save() wrote; a line may end with "\r\n" as well as "\n" (a file an editor saved
  /// with Windows line ends). A damaged file (a bad header, a number that is not one, a merge of
  /// an id not defined before it, a merge or special token given twice, a count other than
  /// vocab_size says, a line over 1 MiB, tokens over kMaxTokenBytes or kMaxVocabBytes, more than
  /// kMaxSpecialTokens) is a DataError naming the file and the line.
  static BytePairEncoding load(const std::string& path);
  /// What save() writes, as a string (a checkpoint stores it), and back; `source` names the text
  /// in load()'s messages.
  std::string to_text() const;
  static BytePairEncoding from_text(const std::string& text, const std::string& source);

 private:
  static BytePairEncoding read(std::istream& in, const std::string& source);
  /// `text` cut at the special tokens, each ordinary stretch cut as pretokenizer_ says and passed to
  /// `piece`, each special token's id appended to the result.
  template <class Piece>
  std::vector<std::uint32_t> encode_with(std::string_view text, SpecialTokens special,
                                         const char* who, const Piece& piece) const;

  std::vector<Merge> merges_;
  Pretokenizer pretokenizer_ = Pretokenizer::none;
  std::vector<std::string> special_;
  std::unordered_map<std::uint64_t, std::uint32_t> ranks_;  ///< pair key -> merge index
  std::vector<std::string> vocab_;                          ///< id -> its bytes
};

}  // namespace tapegrad::data
