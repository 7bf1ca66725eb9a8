// tests/docs/test_pretrained_llama.cpp: the examples of docs/pretrained.md's Llama section, run on
// a tiny Llama written to a folder named "SmolLM2-135M" as the page's. Each ```cpp block of that
// section names this file, and the excerpt check (tests/tools/check_excerpts.cpp) holds its lines
// to the ones below.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "../test_files.hpp"
#include "in_llama_folder.hpp"

using namespace tapegrad;

TEST_SUITE("docs.pretrained_llama") {
TEST_CASE("docs/pretrained.md: load_llama, generate with the cache, save_llama the same bits back") {
  const testing::InLlamaFolder here("docs.pretrained_llama", "load_save");
  pretrained::PretrainedLlama llama = pretrained::load_llama("SmolLM2-135M");  // checked, then read
  llama.model->eval();
  IndexArray prompt = {{1, 2, 3}};
  Generator gen(0);
  IndexArray out = llama.model->generate(prompt, nn::transformer::GenerateOptions(20).top_k(1), gen);
  pretrained::save_llama(*llama.model, "SmolLM2-135M-copy", &llama.config);  // the same bits back

  CHECK(out.shape() == Shape{1, 23});
  CHECK(testing::bytes_of("SmolLM2-135M/model.safetensors") ==
        testing::bytes_of("SmolLM2-135M-copy/model.safetensors"));
  CHECK(testing::bytes_of("SmolLM2-135M/config.json") ==
        testing::bytes_of("SmolLM2-135M-copy/config.json"));
}

TEST_CASE("docs/pretrained.md: a trainer's Llama filled by LlamaWeights") {
  const testing::InLlamaFolder here("docs.pretrained_llama", "weights");
  auto config = pretrained::read_llama_config("SmolLM2-135M/config.json");
  pretrained::LlamaWeights weights("SmolLM2-135M", config.model);  // every check made here
  nn::transformer::LlamaForCausalLM model(config.model);
  weights.read_into(model);

  const auto ours = model.named_parameters(),
             loaded = pretrained::load_llama("SmolLM2-135M").model->named_parameters();
  REQUIRE(ours.size() == loaded.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    CAPTURE(ours[i].first);
    CHECK(testing::bit_equal(ours[i].second.data(), loaded[i].second.data()));
  }
}
}  // TEST_SUITE
