// include/tapegrad/data.hpp: the umbrella header of tapegrad::data, the text a language model is
// trained on: corpus files cut into entries and split by whole entries (or read as one text split
// by characters), a character vocabulary,
// a byte pair encoding, GPT-2's tokenizer, a tokenizer.json's byte-level BPE, and batches of windows of token ids. It links tapegrad::core only.
#pragma once

#include "tapegrad/data/bpe.hpp"
#include "tapegrad/data/gpt2_tokenizer.hpp"
#include "tapegrad/data/hf_tokenizer.hpp"
#include "tapegrad/data/pretokenize.hpp"
#include "tapegrad/data/text.hpp"
#include "tapegrad/data/token_file.hpp"
#include "tapegrad/data/tokenizer.hpp"
#include "tapegrad/data/vocabulary.hpp"
#include "tapegrad/data/windows.hpp"
