// tests/pretrained/test_gpt2.cpp: a GPT in Hugging Face's GPT-2 layout and back, on small models
// this file builds: the file's keys and Conv1D shapes, the round trip to the bit, both key
// layouts (with and without "transformer.", with mask buffers and a tied lm_head), and every
// hostile folder refused before a weight is read, in one line naming the file and the key.
// (tests/pretrained/test_gpt2_parity.cpp checks the values against PyTorch's.)
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <xtensor/xbuilder.hpp>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/io.hpp>
#include <tapegrad/nn/skip_init.hpp>
#include <tapegrad/pretrained.hpp>

#include "../gpt2_files.hpp"
#include "../helpers.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
namespace fs = std::filesystem;
namespace tt = tapegrad::nn::transformer;
using pretrained::load_gpt2;
using pretrained::save_gpt2;

namespace {

tt::GPTConfig tiny_config() {
  return tt::GPTConfig(37, 8).n_layer(2).n_head(2).n_embd(8).gelu("tanh");
}

std::shared_ptr<tt::GPT> tiny_model(std::uint64_t seed = 1) {
  return std::make_shared<tt::GPT>(tiny_config(), std::make_shared<Generator>(seed));
}

// A folder holding `model` as save_gpt2 writes it.
fs::path saved(const std::string& name, const tt::GPT& model) {
  const fs::path dir = testing::fresh_folder("gpt2", name);
  save_gpt2(model, dir.string());
  return dir;
}

// The message of loading `dir`, which must be refused.
std::string refusal(const fs::path& dir) {
  try {
    load_gpt2(dir.string());
  } catch (const CheckpointError& e) {
    return e.what();
  }
  FAIL("expected ", dir.string(), " to be refused");
  return "";
}

// The folder's model.safetensors rewritten by `edit`, which gets the file's contents.
void edit_weights(const fs::path& dir, const std::function<void(io::SafetensorsFile&)>& edit) {
  io::SafetensorsFile f = io::load_safetensors((dir / "model.safetensors").string());
  io::SafetensorsFile out;
  edit(f);
  for (const auto& t : f.tensors())
    out.add_raw(t.name, t.dtype, t.shape, {t.bytes().begin(), t.bytes().end()});
  for (const auto& [k, v] : f.metadata())
    if (k.rfind("tapegrad.", 0) != 0) out.set_metadata(k, v);  // (checksums written afresh)
  io::save_safetensors((dir / "model.safetensors").string(), out);
}

Array transposed(const Array& a) {
  Array t = Array::from_shape({a.shape()[1], a.shape()[0]});
  for (std::size_t i = 0; i < a.shape()[0]; ++i)
    for (std::size_t j = 0; j < a.shape()[1]; ++j) t(j, i) = a(i, j);
  return t;
}

void check_same_parameters(const tt::GPT& a, const tt::GPT& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i].first);
    CHECK(pa[i].first == pb[i].first);
    CHECK(testing::bit_equal(pa[i].second.data(), pb[i].second.data()));
  }
}

}  // namespace

TEST_CASE("save_gpt2 writes transformers' layout: prefixed keys, Conv1D matrices, no tied head") {
  const auto model = tiny_model();
  const fs::path dir = saved("layout", *model);
  CHECK(fs::exists(dir / "config.json"));
  CHECK_FALSE(fs::exists(dir / "vocab.json"));  // no tokenizer given
  const io::SafetensorsFile f = io::load_safetensors((dir / "model.safetensors").string());
  CHECK(f.metadata_value("format") == "pt");
  CHECK(f.tensors().size() == 2 + 2 * 12 + 2);  // wte, wpe, 12 per block, ln_f
  CHECK_FALSE(f.contains("lm_head.weight"));
  CHECK_FALSE(f.contains("transformer.h.0.attn.bias"));
  // Conv1D (in, out): the transpose of the Linear's (out, in)
  const Array& c_attn = dynamic_cast<const tt::CausalSelfAttention&>(*model->transformer->h->ptr<tt::Block>(0)->attn).c_attn->weight.data();
  CHECK(f.record("transformer.h.0.attn.c_attn.weight").shape == Shape{8, 24});
  CHECK(testing::bit_equal(f.to_float("transformer.h.0.attn.c_attn.weight"), transposed(c_attn)));
  CHECK(f.record("transformer.h.1.mlp.c_proj.weight").shape == Shape{32, 8});
  CHECK(f.record("transformer.h.1.mlp.c_fc.bias").shape == Shape{32});
  CHECK(testing::bit_equal(f.to_float("transformer.wte.weight"), model->token_embedding().data()));
  const auto config = pretrained::read_gpt2_config((dir / "config.json").string());
  CHECK(config.n_positions == 8);
  CHECK(config.activation_function == "gelu_new");
}

TEST_CASE("load_gpt2 after save_gpt2 gives the same bits, and the same logits") {
  const auto model = tiny_model(7);
  const fs::path dir = saved("round_trip", *model);
  const pretrained::PretrainedGPT2 loaded = load_gpt2(dir.string());
  CHECK_FALSE(loaded.tokenizer);
  check_same_parameters(*model, *loaded.model);
  CHECK(dynamic_cast<const nn::LayerNorm&>(*loaded.model->transformer->h->ptr<tt::Block>(0)->ln_1)
            .options()
            .eps() == 1e-5);
  model->eval();
  loaded.model->eval();
  IndexArray idx = {{1, 5, 36, 0, 2}};
  CHECK(testing::bit_equal(model->forward(idx).data(), loaded.model->forward(idx).data()));
  // and once more: load -> save -> load keeps every bit
  const fs::path again = saved("round_trip_again", *loaded.model);
  check_same_parameters(*model, *load_gpt2(again.string()).model);
  CHECK(testing::bytes_of(dir / "model.safetensors") ==
        testing::bytes_of(again / "model.safetensors"));
}

TEST_CASE("load_gpt2 reads OpenAI's layout: no prefix, mask buffers skipped, a tied lm_head") {
  const auto model = tiny_model(3);
  const fs::path dir = saved("openai_layout", *model);
  edit_weights(dir, [&](io::SafetensorsFile& f) {
    io::SafetensorsFile plain;
    for (const auto& t : f.tensors())
      plain.add_raw(t.name.substr(std::string("transformer.").size()), t.dtype, t.shape,
                    {t.bytes().begin(), t.bytes().end()});
    for (int i = 0; i < 2; ++i) {
      Array mask = Array::from_shape({1, 1, 8, 8});
      mask.fill(1.0f);
      plain.add("h." + std::to_string(i) + ".attn.bias", std::move(mask));
      plain.add("h." + std::to_string(i) + ".attn.masked_bias", Array(-1e4f));
    }
    f = std::move(plain);
  });
  check_same_parameters(*model, *load_gpt2(dir.string()).model);

  // prefixed, with lm_head.weight stored as its own copy of the table
  const fs::path prefixed = saved("prefixed_layout", *model);
  edit_weights(prefixed, [&](io::SafetensorsFile& f) {
    f.add("lm_head.weight", Array(model->token_embedding().data()));
  });
  check_same_parameters(*model, *load_gpt2(prefixed.string()).model);
}

TEST_CASE("GPT2Weights reads into a model its trainer built, and refuses one of other sizes") {
  const auto model = tiny_model(5);
  const fs::path dir = saved("weights_into", *model);
  const auto config = pretrained::read_gpt2_config((dir / "config.json").string());
  const pretrained::GPT2Weights weights((dir / "model.safetensors").string(), config);
  CHECK(weights.prefix() == "transformer.");
  tt::GPT other(tiny_config(), std::make_shared<Generator>(99));
  weights.read_into(other);
  check_same_parameters(*model, other);
  tt::GPT wider(tt::GPTConfig(37, 8).n_layer(2).n_head(2).n_embd(12).gelu("tanh"));
  CHECK_THROWS_WITH_AS(weights.read_into(wider),
                       doctest::Contains("got vocab_size 37, block_size 8, n_embd 12"), ValueError);
}

TEST_CASE("save_gpt2 refuses what GPT-2's layout cannot hold") {
  const tt::GPT rope(tt::GPTConfig(37, 8).n_layer(1).n_head(2).n_embd(8).position("rope"));
  CHECK_THROWS_WITH_AS(save_gpt2(rope, testing::fresh_folder("gpt2", "rope").string()),
                       doctest::Contains("GPT-2's layout holds position \"learned\" only"),
                       ValueError);
  const auto model = tiny_model();
  pretrained::GPT2Config other = pretrained::gpt2_config_of(model->config());
  other.n_layer = 3;
  CHECK_THROWS_WITH_AS(
      save_gpt2(*model, testing::fresh_folder("gpt2", "other_config").string(), nullptr, &other),
      doctest::Contains("save_gpt2: expected a GPT of GPT-2's choices"), ValueError);
}

TEST_CASE("load_gpt2 refuses a missing, extra or misshapen key before reading a weight") {
  const auto model = tiny_model();
  const auto with_edit = [&](const std::string& name,
                             const std::function<void(io::SafetensorsFile&)>& edit) {
    const fs::path dir = saved(name, *model);
    edit_weights(dir, edit);
    return dir;
  };
  const auto drop = [](const std::string& key) {
    return [key](io::SafetensorsFile& f) {
      io::SafetensorsFile kept;
      for (const auto& t : f.tensors())
        if (t.name != key)
          kept.add_raw(t.name, t.dtype, t.shape, {t.bytes().begin(), t.bytes().end()});
      f = std::move(kept);
    };
  };
  std::string m = refusal(with_edit("missing", drop("transformer.h.1.mlp.c_fc.bias")));
  CHECK(m.find("model.safetensors': missing key 'transformer.h.1.mlp.c_fc.bias' (GPT-2 with "
               "n_layer 2 from config.json has 28 weights)") != std::string::npos);

  m = refusal(with_edit(
      "extra", [](io::SafetensorsFile& f) { f.add("transformer.h.2.ln_1.weight", Array{1.f}); }));
  CHECK(m.find("unexpected key 'transformer.h.2.ln_1.weight': GPT-2 with n_layer 2 (config.json) "
               "has no such tensor") != std::string::npos);

  m = refusal(with_edit("mixed", [](io::SafetensorsFile& f) { f.add("ln_f.weight", Array{1.f}); }));
  CHECK(
      m.find("unexpected key 'ln_f.weight' in a file whose other keys start with 'transformer.'") !=
      std::string::npos);

  m = refusal(with_edit("shape", [&](io::SafetensorsFile& f) {
    drop("transformer.h.0.attn.c_attn.weight")(f);
    f.add("transformer.h.0.attn.c_attn.weight", Array(xt::zeros<float>({24, 8})));  // Linear's layout
  }));
  CHECK(m.find("'transformer.h.0.attn.c_attn.weight' is (24, 8), config.json says (8, 24)") !=
        std::string::npos);

  m = refusal(with_edit("dtype", [&](io::SafetensorsFile& f) {
    drop("transformer.ln_f.bias")(f);
    f.add("transformer.ln_f.bias", IndexArray(xt::zeros<std::int64_t>({8})));
  }));
  CHECK(m.find("'transformer.ln_f.bias' holds I64, expected floating-point weights") !=
        std::string::npos);

  m = refusal(with_edit("lm_head_dtype", [](io::SafetensorsFile& f) {
    f.add("lm_head.weight", IndexArray(xt::zeros<std::int64_t>({37, 8})));
  }));
  CHECK(m.find("lm_head.weight holds I64, expected floating-point weights") != std::string::npos);

  m = refusal(with_edit("mask_shape", [](io::SafetensorsFile& f) {
    f.add("transformer.h.0.attn.bias", Array(xt::zeros<float>({3})));
  }));
  CHECK(m.find("'transformer.h.0.attn.bias' is (3,), expected the mask buffer (1, 1, 8, 8)") !=
        std::string::npos);

  m = refusal(with_edit("lm_head_shape", [](io::SafetensorsFile& f) {
    f.add("lm_head.weight", Array(xt::zeros<float>({36, 8})));
  }));
  CHECK(m.find("lm_head.weight is (36, 8), expected (37, 8) (vocab_size, n_embd)") !=
        std::string::npos);
}

TEST_CASE("load_gpt2 refuses an untied head and weights that are not finite") {
  const auto model = tiny_model();
  fs::path dir = saved("untied", *model);
  edit_weights(dir, [&](io::SafetensorsFile& f) {
    Array head = model->token_embedding().data();
    head(3, 5) += 1.0f;
    f.add("lm_head.weight", std::move(head));
  });
  CHECK(refusal(dir).find("lm_head.weight differs from transformer.wte.weight at (3, 5)") !=
        std::string::npos);

  dir = saved("nan", *model);
  edit_weights(dir, [&](io::SafetensorsFile& f) {
    Array w = f.to_float("transformer.h.1.attn.c_proj.weight");
    w(2, 3) = std::numeric_limits<float>::quiet_NaN();
    io::SafetensorsFile g;
    for (const auto& t : f.tensors())
      if (t.name != "transformer.h.1.attn.c_proj.weight")
        g.add_raw(t.name, t.dtype, t.shape, {t.bytes().begin(), t.bytes().end()});
    g.add("transformer.h.1.attn.c_proj.weight", std::move(w));
    f = std::move(g);
  });
  CHECK(refusal(dir).find("'transformer.h.1.attn.c_proj.weight' holds nan at flat position 19: "
                          "a model's weights are finite") != std::string::npos);
}

TEST_CASE("load_gpt2 refuses a truncated or damaged file, and a folder without safetensors") {
  const auto model = tiny_model();
  fs::path dir = saved("truncated", *model);
  const std::string bytes = testing::bytes_of(dir / "model.safetensors");
  testing::write_file(dir / "model.safetensors", bytes.substr(0, bytes.size() - 100));
  CHECK(refusal(dir).find("MetadataIncompleteBuffer") != std::string::npos);

  dir = saved("flipped", *model);
  std::string flipped = bytes;
  flipped[flipped.size() - 3] ^= 0x10;  // a bit of the last tensor: its CRC-32C no longer holds
  testing::write_file(dir / "model.safetensors", flipped);
  CHECK(refusal(dir).find("ChecksumMismatch") != std::string::npos);

  dir = testing::fresh_folder("gpt2", "pickle");
  testing::write_file(dir / "pytorch_model.bin", "PK\x03\x04 not read");
  std::string m = refusal(dir);
  CHECK(m.find("holds pytorch_model.bin and no model.safetensors. tapegrad reads safetensors only "
               "and never unpickles (loading a pickle can run any code it holds). Convert it") !=
        std::string::npos);
  CHECK(m.find("save_pretrained(") != std::string::npos);

  dir = testing::fresh_folder("gpt2", "sharded");
  testing::write_file(dir / "model.safetensors.index.json", "{}");
  CHECK(refusal(dir).find("holds a sharded model") != std::string::npos);

  CHECK(refusal(testing::fresh_folder("gpt2", "empty")).find("has no model.safetensors") !=
        std::string::npos);
  CHECK(refusal(testing::fresh_folder("gpt2", "empty") / "nowhere").find("no such folder") !=
        std::string::npos);

  dir = saved("no_config", *model);
  fs::remove(dir / "config.json");
  CHECK(refusal(dir).find("has model.safetensors but no config.json") != std::string::npos);

  dir = saved("bad_config", *model);
  testing::write_file(
      dir / "config.json",
      R"({"n_embd": 8, "n_head": 3, "n_layer": 2, "n_positions": 8, "vocab_size": 37})");
  CHECK_THROWS_WITH_AS(load_gpt2(dir.string()),
                       doctest::Contains("config.json': n_head: expected a divisor of n_embd"),
                       CheckpointError);

  dir = saved("half_tokenizer", *model);
  testing::write_file(dir / "merges.txt", "#version: 0.2\n");
  CHECK(refusal(dir).find("holds merges.txt but no vocab.json") != std::string::npos);
}

TEST_CASE("SkipInitGuard: modules built under it are allocated, not initialised") {
  {
    nn::SkipInitGuard skip;
    CHECK(nn::init_skipped());
    nn::Linear lin(nn::LinearOptions(3, 4));
    CHECK(lin.weight.data().shape() == Shape{4, 3});
  }
  CHECK_FALSE(nn::init_skipped());
  // the generator was not drawn from: the next model built from it is the one built without
  auto g1 = std::make_shared<Generator>(5), g2 = std::make_shared<Generator>(5);
  {
    nn::SkipInitGuard skip;
    tt::GPT skipped(tiny_config(), g1);
  }
  tt::GPT first(tiny_config(), g1), fresh(tiny_config(), g2);
  check_same_parameters(first, fresh);
}

TEST_CASE("load_gpt2 refuses a tokenizer whose size is not config.json's vocab_size") {
  const std::string files = testing::gpt2_folder();
  if (files.empty()) return;
  const fs::path dir = saved("tokenizer_size", *tiny_model());  // vocab_size 37
  testing::copy_gpt2_tokenizer(files, dir);
  CHECK(refusal(dir).find("the tokenizer (vocab.json, merges.txt) has 50257 tokens, but "
                          "config.json's vocab_size is 37") != std::string::npos);
}
