// tests/docs/in_llama_folder.hpp: the folder docs/pretrained.md's Llama and LoRA examples read:
// a tiny Llama (tests/examples/tiny_llama.hpp's sizes, 64 tokens) saved as "SmolLM2-135M" in a
// fresh folder, which is the working directory while an InLlamaFolder lives.
#pragma once

#include <filesystem>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../examples/tiny_llama.hpp"
#include "../test_files.hpp"

namespace tapegrad::testing {

inline std::filesystem::path llama_folder(const std::string& suite, const std::string& name) {
  const auto dir = fresh_folder(suite, name);
  const nn::transformer::LlamaForCausalLM model(tiny_llama_config(64));
  pretrained::save_llama(model, (dir / "SmolLM2-135M").string());
  return dir;
}

struct InLlamaFolder {
  InLlamaFolder(const std::string& suite, const std::string& name)
      : in(llama_folder(suite, name)) {}
  InFolder in;
};

}  // namespace tapegrad::testing
