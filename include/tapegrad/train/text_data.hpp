// include/tapegrad/train/text_data.hpp
//
// A language model's data, as the training programs take it: UTF-8 text files (Debian's fortunes
// by default) or a token file, a tokenizer, the split into training and validation tokens.
//
//   --data-format fortunes   entries between '%' lines (strfile's format), split by whole entries
//                            at random (--split-seed): the fortunes, and any fortune file
//   --data-format text       the files as one stream (as `cat` gives them), the first
//                            1 - --val-fraction of its characters for training, the rest for
//                            validation, nothing added: nanoGPT's prepare scripts' split
//   --tokens FILE            a token file (data/token_file.hpp), its last --val-fraction of ids
//                            for validation, read a window at a time (no memory of its own)
//
// The tokenizer (--tokenizer) is the training text's characters ("char"), a byte pair encoding
// trained on the training text ("bpe:N": never on the validation text, which would leak into the
// tokens), one saved by tokenize ("bpe-model:FILE"), or GPT-2's ("gpt2:DIR").
//
// Files are checked before they are read: regular files only (a FIFO with no writer would block
// the read for ever, /dev/zero never ends), of at most kMaxTextBytes in all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/data/text.hpp"
#include "tapegrad/data/tokenizer.hpp"
#include "tapegrad/train/trainer.hpp"
#include "tapegrad/train/windows.hpp"

namespace tapegrad::train {

/// What the text is and how it is cut into tokens. Each field is the flag of the same name.
struct TextOptions {
  std::vector<std::string> data;   ///< --data: text files ("": Debian's fortunes)
  std::string tokens;              ///< --tokens: a token file instead of --data
  std::string data_format;         ///< --data-format: fortunes, text, or "" (the files' own)
  std::string tokenizer = "char";  ///< --tokenizer: char, bpe:N, bpe-model:FILE, gpt2:DIR, hf:FILE
  double val_fraction = 0.1;       ///< --val-fraction: the share held out for validation
  std::uint64_t split_seed = 0;    ///< --split-seed: the entries' split, the validation windows
};

/// The most text the programs read from --data, in all (held as 4-byte code points, then as
/// 8-byte ids: 16 MiB of text already takes about half a gigabyte, four Shakespeares).
inline constexpr std::uintmax_t kMaxTextBytes = 16u << 20;

struct TextData {
  std::vector<std::string> files;
  std::string format;       ///< "fortunes", "text", or "tokens" (a token file)
  data::Split split;        ///< fortunes: the entries on each side
  std::u32string val_text;  ///< the validation text (the attention heatmaps read a line of it)
  data::Tokenizer tokenizer{data::Vocabulary()};
  TokenStream train, val;
  std::size_t train_bytes = 0, val_bytes = 0;  ///< of UTF-8 text (0 for a token file)
  std::vector<std::string> warnings;  ///< for the program to print (a version 1 token file)
};

/// The tokens of o.tokens or of the text files, each side holding more than one window of
/// block_size + 1 ids. DataError naming the flag and the file for what cannot be read or is too
/// short; ValueError for flags that do not go together.
TextData load_text(const TextOptions& o, std::size_t block_size);

/// The tokenizer of --tokenizer (see above); `train_text` trains a bpe:N.
data::Tokenizer make_tokenizer(const std::string& spec, const std::u32string& train_text);

/// The fixed validation windows of `d`: `count` windows at starts drawn once from split_seed + 1,
/// in batches of B, its <unk> (char) or -100 not scored, the loss also in bits per byte.
Validation validation_windows(const TextData& d, std::size_t T, std::size_t count, std::size_t B,
                              std::uint64_t split_seed);

/// The first validation line of at least 24 characters, cut to T (for the attention heatmaps):
/// the validation text of --data-format text starts where the training text stops, most often
/// within a line, so a whole line after it is taken when there is one.
std::u32string attention_line(const TextData& d, std::size_t T);

}  // namespace tapegrad::train
