// tests/docs/test_pretrained.cpp: the examples of docs/pretrained.md ("From a program"), run on a
// small GPT-2 with GPT-2's tokenizer, written to a folder named "gpt2" as the page's. Each ```cpp
// block of that page names this file, and the excerpt check (tests/tools/check_excerpts.cpp)
// holds its lines to the ones below.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../gpt2_files.hpp"
#include "../helpers.hpp"
#include "../test_files.hpp"

using namespace tapegrad;

namespace {
// A small GPT-2 in `dir`/gpt2, with GPT-2's tokenizer; `dir` becomes the working directory.
std::filesystem::path gpt2_folder_in(const std::string& name, const std::string& files) {
  const auto dir = testing::fresh_folder("docs.pretrained", name);
  const nn::transformer::GPT model(
      nn::transformer::GPTConfig(50257, 32).n_layer(1).n_head(2).n_embd(8).gelu("tanh"));
  const auto tokenizer = data::GPT2Tokenizer::load(files);
  pretrained::save_gpt2(model, (dir / "gpt2").string(), &tokenizer);
  return dir;
}
struct InGpt2Folder {
  InGpt2Folder(const std::string& name, const std::string& files)
      : in(gpt2_folder_in(name, files)) {}
  testing::InFolder in;
};
}  // namespace

TEST_CASE("docs/pretrained.md: load_gpt2, encode, save_gpt2 the same bits back") {
  const std::string files = testing::gpt2_folder();
  if (files.empty()) return;
  const InGpt2Folder here("load_save", files);
  pretrained::PretrainedGPT2 gpt2 = pretrained::load_gpt2("gpt2");  // checked, then read
  gpt2.model->eval();
  std::vector<std::uint32_t> ids = gpt2.tokenizer->encode("Hello, I'm a language model,");
  pretrained::save_gpt2(*gpt2.model, "gpt2-copy", &*gpt2.tokenizer);  // the same bits back

  CHECK(ids == std::vector<std::uint32_t>{15496, 11, 314, 1101, 257, 3303, 2746, 11});
  CHECK(testing::bytes_of("gpt2/model.safetensors") ==
        testing::bytes_of("gpt2-copy/model.safetensors"));
}

TEST_CASE("docs/pretrained.md: a trainer's model filled by GPT2Weights") {
  const std::string files = testing::gpt2_folder();
  if (files.empty()) return;
  const InGpt2Folder here("weights", files);
  auto config = pretrained::read_gpt2_config("gpt2/config.json");
  pretrained::GPT2Weights weights("gpt2/model.safetensors", config);  // every check made here
  nn::transformer::GPT model(config.gpt_config(/*dropout=*/0.0));
  weights.read_into(model);

  const auto ours = model.named_parameters(),
             loaded = pretrained::load_gpt2("gpt2").model->named_parameters();
  REQUIRE(ours.size() == loaded.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    CAPTURE(ours[i].first);
    CHECK(testing::bit_equal(ours[i].second.data(), loaded[i].second.data()));
  }
}
