// tests/docs/test_pretrained_lora.cpp: the examples of docs/pretrained.md's LoRA section, run on a
// tiny Llama written to a folder named "SmolLM2-135M" as the page's. Each ```cpp block of that
// section names this file, and the excerpt check (tests/tools/check_excerpts.cpp) holds its lines
// to the ones below.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <tapegrad/io/staged_folder.hpp>
#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "../test_files.hpp"
#include "in_llama_folder.hpp"

using namespace tapegrad;

TEST_SUITE("docs.pretrained_lora") {
TEST_CASE("docs/pretrained.md: LoRA on a Llama, trained, saved in PEFT's layout, loaded, merged") {
  const testing::InLlamaFolder here("docs.pretrained_lora", "train_save_merge");
  const IndexArray idx = {{1, 2, 3, 4}}, targets = {{2, 3, 4, 5}};

  pretrained::PretrainedLlama llama = pretrained::load_llama("SmolLM2-135M");
  nn::add_lora(*llama.model, {"q_proj", "v_proj"}, nn::LoRAOptions(8).lora_alpha(16));
  nn::ParameterGroups groups = llama.model->parameter_groups();  // A and B: the rest is frozen
  optim::AdamW opt(groups.decay, optim::AdamWOptions(1e-3));
  llama.model->loss(idx, targets).backward();
  opt.step();
  io::StagedFolder out("SmolLM2-135M-lora", "--export-adapter");  // absent or empty, locked
  pretrained::save_lora_adapter(*llama.model, out.staging().string(), "SmolLM2-135M");
  out.commit();  // the folder appears whole

  CHECK(groups.decay.size() == 8);  // 2 layers x (q_proj, v_proj) x (A, B)
  CHECK(groups.no_decay.empty());

  pretrained::PretrainedLlama base = pretrained::load_llama("SmolLM2-135M");
  pretrained::load_lora_adapter(*base.model, "SmolLM2-135M-lora");  // PEFT's, or one saved here
  nn::merge_lora(*base.model);                                        // W += (alpha / r) B A
  pretrained::save_llama(*base.model, "SmolLM2-135M-merged");         // a plain Llama folder

  llama.model->eval();
  base.model->eval();
  autograd::NoGradGuard no_grad;
  CHECK(testing::all_close(pretrained::load_llama("SmolLM2-135M-merged").model->forward(idx).data(),
                           llama.model->forward(idx).data(), 1e-5, 1e-5));
}
}  // TEST_SUITE
