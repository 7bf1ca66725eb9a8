// include/tapegrad/data/tokenizer.hpp: the tokenizer a language model reads its text with, one
// of four behind one interface: the characters of the training text (data/vocabulary.hpp), a
// byte pair encoding trained on it (data/bpe.hpp), GPT-2's (data/gpt2_tokenizer.hpp), or a
// pretrained model's tokenizer.json (data/hf_tokenizer.hpp).
//
// A model is only as comparable as its tokens: a loss in nats per token means little across
// tokenizers, since a BPE token holds several characters. bytes_of() gives what each token stands
// for in bytes of UTF-8, so a loss can be put in bits per byte, which is comparable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tapegrad/data/bpe.hpp"
#include "tapegrad/data/gpt2_tokenizer.hpp"
#include "tapegrad/data/hf_tokenizer.hpp"
#include "tapegrad/data/vocabulary.hpp"

namespace tapegrad::data {

class Tokenizer {
 public:
  explicit Tokenizer(Vocabulary characters);
  explicit Tokenizer(BytePairEncoding bpe);
  explicit Tokenizer(GPT2Tokenizer gpt2);
  explicit Tokenizer(HFTokenizer hf);

  /// "char", "bpe", "gpt2" or "hf".
  std::string name() const;
  /// GPT-2's tokenizer when it is the one held, else null.
  const GPT2Tokenizer* gpt2() const;
  /// The tokenizer.json's tokenizer when it is the one held, else null.
  const HFTokenizer* hf() const;
  std::int64_t vocab_size() const;
  /// UTF-8 text as ids. The text of a special token ("<|endoftext|>") is ordinary text here: a
  /// corpus that quotes one does not end a document by doing so. (A tokenizer.json's added tokens
  /// that are not special are still found, as Hugging Face's library finds them.) Characters the
  /// vocabulary lacks are <unk>. DataError naming `source` and the byte offset if the text is not
  /// UTF-8.
  std::vector<std::int64_t> encode(std::string_view text, const std::string& source) const;
  /// The ids' text; an id outside [0, vocab_size()) is a ValueError naming it.
  std::string decode(const std::int64_t* ids, std::size_t n) const;
  /// The target a loss should not score: Vocabulary::kUnk for characters; -100, which no token
  /// is, for the others (PyTorch's default ignore_index).
  std::int64_t ignore_index() const;
  /// The bytes of text token `id` stands for (3 for <unk>, which shows as U+FFFD).
  std::size_t bytes_of(std::int64_t id) const { return token_bytes_.at(std::size_t(id)); }

  /// The tokenizer as text (what a checkpoint stores beside name()), and back: from_text is a
  /// ValueError naming `source` when the text is not what to_text() writes for `name`.
  std::string to_text() const;
  static Tokenizer from_text(const std::string& name, const std::string& text,
                             const std::string& source);

  /// A hash of everything that decides the ids: FNV-1a 64 of the bytes of name(), "\n" and
  /// to_text(), which hold its kind and its vocabulary (the characters; the BPE's merges, its
  /// pretokenizer and its special tokens; GPT-2's numbering of them; a tokenizer.json as
  /// HFTokenizer::to_json writes it). Two tokenizers that give any text the same ids have the
  /// same fingerprint; a BPE of the same size trained on other text has another. Token files
  /// carry it (data/token_file.hpp).
  std::uint64_t fingerprint() const;

 private:
  void count_token_bytes();
  std::variant<Vocabulary, BytePairEncoding, GPT2Tokenizer, HFTokenizer> tokenizer_;
  std::vector<std::size_t> token_bytes_;  ///< id -> bytes_of(id)
};

/// Tokenizer(bpe).fingerprint(), Tokenizer(gpt2).fingerprint() and Tokenizer(hf).fingerprint(),
/// without building the Tokenizer (which copies the tokenizer and counts every token's bytes).
std::uint64_t tokenizer_fingerprint(const BytePairEncoding& bpe);
std::uint64_t tokenizer_fingerprint(const GPT2Tokenizer& gpt2);
std::uint64_t tokenizer_fingerprint(const HFTokenizer& hf);

}  // namespace tapegrad::data
