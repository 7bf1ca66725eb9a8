// include/tapegrad/data/hf_tokenizer.hpp: a byte-level BPE read from tokenizer.json, the file of
// Hugging Face's tokenizers library that GPT-2, Llama 3, SmolLM2 and Qwen2 ship.
//
// Encoding, as that library defines it for these models:
//   1. added tokens (<|begin_of_text|>, <|endoftext|>, ...) are cut out of the raw text first,
//      the leftmost match first, and of two starting at one byte the longest;
//   2. the pre-tokenizer cuts each stretch between them into pieces: a Split with the file's
//      own regex (Llama 3's, say), Digits, or ByteLevel with GPT-2's pattern;
//   3. ByteLevel writes each byte of a piece as a printable character (GPT-2's bytes_to_unicode:
//      the space is 'Ġ'), the spelling the vocabulary's tokens have;
//   4. the BPE model joins, within each piece, the adjacent pair of lowest rank (its index in
//      `merges`), the leftmost of equal ranks first, until no pair has a merge; with
//      `ignore_merges` (Llama 3) a piece the vocabulary holds whole is that one token.
// docs/tokenizers.md lists the subset of the format read and what is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/data/pretokenize.hpp"

namespace tapegrad::data {

namespace detail {
struct HFTokenizerModel;
}

class HFTokenizer {
 public:
  /// One entry of the file's `added_tokens`.
  struct AddedToken {
    std::uint32_t id = 0;
    std::string content;      ///< the text it is found as, and decodes to
    bool special = false;     ///< what SpecialTokens decides for (others are always found)
    bool normalized = false;  ///< looked for after the others, in what they leave
  };
  /// What load() accepts: a file of at most 128 MiB, ids below 2^20.
  static constexpr std::uint64_t kMaxFileBytes = std::uint64_t(128) << 20;
  static constexpr std::size_t kMaxVocabSize = std::size_t(1) << 20;

  /// Reads a tokenizer.json. A model other than a byte-level BPE is refused in one line naming
  /// its type (or, for a sentencepiece BPE, the field that shows it) and what is supported; a
  /// malformed field (a merge of an unknown token, an id out of range or given twice, a regex
  /// PCRE2 rejects, ...) is a DataError naming the file and the field.
  static HFTokenizer load(const std::string& path);
  /// The same from the file's text; `source` names it in messages.
  static HFTokenizer from_json(std::string_view json, const std::string& source);

  /// `text` as ids: Hugging Face's encode(text, add_special_tokens=False). `special` says what
  /// the text of a special added token does (SpecialTokens::allow is that library's behaviour;
  /// added tokens that are not special are always found). ValueError naming the byte offset if
  /// `text` is not UTF-8, or for a special token's text with SpecialTokens::refuse.
  std::vector<std::uint32_t> encode(std::string_view text,
                                    SpecialTokens special = SpecialTokens::refuse) const;
  /// The tokens' bytes read as UTF-8, each ill-formed part as U+FFFD (the ByteLevel decoder);
  /// an added token gives its content. Nothing is skipped. ValueError naming an id outside
  /// [0, vocab_size()) and its position.
  std::string decode(const std::vector<std::uint32_t>& ids) const;

  /// Every id, the vocabulary's and the added tokens': they number 0 .. vocab_size() - 1.
  std::size_t vocab_size() const;
  /// The bytes token `id` stands for (an added token's content for one). ValueError unless
  /// id < vocab_size().
  const std::string& bytes_of(std::uint32_t id) const;
  /// The id of an added token's content or of a vocabulary token as the file spells it
  /// ("Ġthe"), or -1: the library's token_to_id.
  std::int64_t token_to_id(std::string_view token) const;
  /// The added tokens, in id order.
  const std::vector<AddedToken>& added_tokens() const;

  /// The tokenizer as a tokenizer.json of the subset read, the same for any two files that
  /// encode alike written alike: vocab in id order, merges as [a, b] pairs, the pre-tokenizer,
  /// the added tokens and the post_processor as read; no whitespace. from_json of it gives this
  /// tokenizer back (a checkpoint stores it).
  std::string to_json() const;

 private:
  explicit HFTokenizer(std::shared_ptr<const detail::HFTokenizerModel> model);
  std::shared_ptr<const detail::HFTokenizerModel> model_;  ///< read-only: copies share it
};

}  // namespace tapegrad::data
