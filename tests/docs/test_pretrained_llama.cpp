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

using namespace tapegrad;

namespace {
// A tiny Llama in `dir`/SmolLM2-135M; `dir` becomes the working directory.
struct InLlamaFolder {
  explicit InLlamaFolder(const std::string& name) : old_(std::filesystem::current_path()) {
    const auto dir = testing::fresh_folder("docs.pretrained_llama", name);
    const nn::transformer::LlamaForCausalLM model(nn::transformer::LlamaConfig()
                                                      .vocab_size(64)
                                                      .hidden_size(16)
                                                      .intermediate_size(32)
                                                      .num_hidden_layers(2)
                                                      .num_attention_heads(4)
                                                      .num_key_value_heads(2)
                                                      .max_position_embeddings(32)
                                                      .tie_word_embeddings(true));
    pretrained::save_llama(model, (dir / "SmolLM2-135M").string());
    std::filesystem::current_path(dir);
  }
  ~InLlamaFolder() { std::filesystem::current_path(old_); }
  InLlamaFolder(const InLlamaFolder&) = delete;
  InLlamaFolder& operator=(const InLlamaFolder&) = delete;

 private:
  std::filesystem::path old_;
};
}  // namespace

TEST_SUITE("docs.pretrained_llama") {
TEST_CASE("docs/pretrained.md: load_llama, generate with the cache, save_llama the same bits back") {
  const InLlamaFolder here("load_save");
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
  const InLlamaFolder here("weights");
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
