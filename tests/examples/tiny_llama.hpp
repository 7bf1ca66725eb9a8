// tests/examples/tiny_llama.hpp: a tiny Llama folder for the program tests (hidden 16, 2 layers,
// 4 query heads over 2 key/value heads, tied), with a byte-level BPE tokenizer.json whose
// vocabulary is the model's; and its sizes alone, for the docs tests' folder
// (tests/docs/in_llama_folder.hpp). Needs TAPEGRAD_SOURCE_DIR.
#pragma once

#include <filesystem>
#include <memory>

#include <tapegrad/tapegrad.hpp>

namespace tapegrad::testing {

inline const std::filesystem::path kTinyLlamaTokenizer =
    std::filesystem::path(TAPEGRAD_SOURCE_DIR) /
    "tests/data/fixtures/hf_tokenizer/llama3_like.json";

/// The tiny Llama's sizes, for a vocabulary of `vocab_size` tokens.
inline nn::transformer::LlamaConfig tiny_llama_config(std::int64_t vocab_size) {
  return nn::transformer::LlamaConfig()
      .vocab_size(vocab_size)
      .hidden_size(16)
      .intermediate_size(32)
      .num_hidden_layers(2)
      .num_attention_heads(4)
      .num_key_value_heads(2)
      .max_position_embeddings(32)
      .tie_word_embeddings(true);
}

/// Writes the model and its tokenizer.json into dir/llama and returns that folder.
inline std::filesystem::path tiny_llama(const std::filesystem::path& dir) {
  const data::Tokenizer tokenizer(data::HFTokenizer::load(kTinyLlamaTokenizer.string()));
  const nn::transformer::LlamaForCausalLM model(
      tiny_llama_config(std::int64_t(tokenizer.vocab_size())), std::make_shared<Generator>(3));
  pretrained::save_llama(model, (dir / "llama").string());
  std::filesystem::copy_file(kTinyLlamaTokenizer, dir / "llama" / "tokenizer.json");
  return dir / "llama";
}

}  // namespace tapegrad::testing
