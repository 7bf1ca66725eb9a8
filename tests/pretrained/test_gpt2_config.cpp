// tests/pretrained/test_gpt2_config.cpp: GPT-2's config.json, read field by field: the fields
// tapegrad uses, transformers' defaults for the optional ones, and every bad file refused with
// one line naming the file and the field. Written back, a config reads as itself.
#include <doctest/doctest.h>

#include <string>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/pretrained.hpp>

#include "../test_files.hpp"

using namespace tapegrad;
using pretrained::GPT2Config;
using pretrained::read_gpt2_config;

namespace {

const std::string kSizes =
    R"("n_embd": 8, "n_head": 2, "n_layer": 3, "n_positions": 16, "vocab_size": 50)";

// A config.json of `text` in a fresh folder; its path.
std::string config_file(const std::string& name, const std::string& text) {
  const auto dir = testing::fresh_folder("gpt2_config", name);
  testing::write_file(dir / "config.json", text);
  return (dir / "config.json").string();
}

// The message of reading `text` (which must be refused), with its kind checked.
std::string refusal(const std::string& name, const std::string& text) {
  const std::string path = config_file(name, text);
  try {
    read_gpt2_config(path);
  } catch (const CheckpointError& e) {
    CHECK(e.kind == "InvalidConfig");
    CHECK(std::string(e.what()).find(path) != std::string::npos);
    return e.what();
  }
  FAIL("expected '", text, "' to be refused");
  return "";
}

}  // namespace

TEST_CASE("read_gpt2_config reads GPT-2's sizes, and transformers' defaults for the rest") {
  const GPT2Config c = read_gpt2_config(config_file("minimal", "{" + kSizes + "}"));
  CHECK(c.n_embd == 8);
  CHECK(c.n_head == 2);
  CHECK(c.n_layer == 3);
  CHECK(c.n_positions == 16);
  CHECK(c.vocab_size == 50);
  CHECK(c.layer_norm_epsilon == 1e-5);
  CHECK(c.activation_function == "gelu_new");
  CHECK(c.resid_pdrop == 0.1);

  const GPT2Config d = read_gpt2_config(
      config_file("full", "{" + kSizes +
                              R"(, "layer_norm_epsilon": 1e-6, "activation_function": "gelu",
        "attn_pdrop": 0.0, "embd_pdrop": 0.2, "resid_pdrop": 0.3, "n_inner": null,
        "tie_word_embeddings": true, "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
        "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}}})"));
  CHECK(d.layer_norm_epsilon == 1e-6);
  CHECK(d.activation_function == "gelu");
  CHECK(d.attn_pdrop == 0.0);
  CHECK(d.embd_pdrop == 0.2);
  CHECK(d.resid_pdrop == 0.3);
}

TEST_CASE("a GPT-2 config becomes the GPT of GPT-2's choices, and gelu_new is the tanh GELU") {
  GPT2Config c;
  c.n_embd = 8, c.n_head = 2, c.n_layer = 1, c.n_positions = 4, c.vocab_size = 10;
  c.layer_norm_epsilon = 1e-6;
  const nn::transformer::GPTConfig g = c.gpt_config(0.25);
  CHECK(g.vocab_size() == 10);
  CHECK(g.block_size() == 4);
  CHECK(g.position() == "learned");
  CHECK(g.norm() == "layernorm");
  CHECK(g.mlp() == "gelu");
  CHECK(g.gelu() == "tanh");
  CHECK(g.norm_eps() == 1e-6);
  CHECK(g.dropout() == 0.25);
  c.activation_function = "gelu";
  CHECK(c.gpt_config().gelu() == "none");
  c.activation_function = "gelu_pytorch_tanh";
  CHECK(c.gpt_config().gelu() == "tanh");

  CHECK(pretrained::gpt2_config_of(g).activation_function == "gelu_new");
  CHECK(pretrained::gpt2_config_of(g).layer_norm_epsilon == 1e-6);
  CHECK_THROWS_WITH_AS(
      pretrained::gpt2_config_of(nn::transformer::GPTConfig(10, 4).position("rope")),
      doctest::Contains("GPT-2's layout holds position \"learned\" only, got \"rope\""),
      ValueError);
}

TEST_CASE("a config written by to_json reads back as itself") {
  GPT2Config c;
  c.n_embd = 12, c.n_head = 3, c.n_layer = 2, c.n_positions = 33, c.vocab_size = 77;
  c.layer_norm_epsilon = 1e-6, c.activation_function = "gelu", c.attn_pdrop = 0.0;
  const GPT2Config d = read_gpt2_config(config_file("round_trip", c.to_json()));
  CHECK(d.n_embd == 12);
  CHECK(d.n_head == 3);
  CHECK(d.n_layer == 2);
  CHECK(d.n_positions == 33);
  CHECK(d.vocab_size == 77);
  CHECK(d.layer_norm_epsilon == 1e-6);
  CHECK(d.activation_function == "gelu");
  CHECK(d.attn_pdrop == 0.0);
  CHECK(d.embd_pdrop == 0.1);
  CHECK(c.to_json().find("\"architectures\": [\n    \"GPT2LMHeadModel\"\n  ]") !=
        std::string::npos);
}

TEST_CASE("read_gpt2_config refuses a field out of range or of the wrong type, naming it") {
  const auto with = [](const std::string& field, const std::string& value) {
    std::string sizes = kSizes;
    const std::string key = "\"" + field + "\": ";
    const auto at = sizes.find(key);
    if (at == std::string::npos) return "{" + sizes + ", " + key + value + "}";
    const auto end = sizes.find(',', at);
    return "{" +
           sizes.replace(at, end == std::string::npos ? std::string::npos : end - at, key + value) +
           "}";
  };
  CHECK(refusal("head", with("n_head", "3"))
            .find("n_head: expected a divisor of n_embd (8), got 3") != std::string::npos);
  CHECK(refusal("vocab0", with("vocab_size", "0"))
            .find("vocab_size: expected an integer in [1, 16777216], got 0") != std::string::npos);
  CHECK(refusal("positions", with("n_positions", "1000000000000"))
            .find("n_positions: expected an integer in [1, 1048576], got 1000000000000") !=
        std::string::npos);
  CHECK(refusal("negative", with("n_layer", "-2")).find("n_layer: expected an integer in") !=
        std::string::npos);
  CHECK(
      refusal("float", with("n_embd", "8.0")).find("n_embd: expected an integer, got number 8.0") !=
      std::string::npos);
  CHECK(
      refusal("string", with("n_embd", "\"8\"")).find("n_embd: expected an integer, got string") !=
      std::string::npos);
  CHECK(
      refusal("bool", with("n_layer", "true")).find("n_layer: expected an integer, got boolean") !=
      std::string::npos);
  CHECK(refusal("missing", R"({"n_embd": 8, "n_head": 2, "n_positions": 16, "vocab_size": 50})")
            .find("n_layer: missing") != std::string::npos);
  CHECK(refusal("activation", with("activation_function", "\"relu\""))
            .find("activation_function: expected \"gelu_new\"") != std::string::npos);
  CHECK(refusal("activation_type", with("activation_function", "1"))
            .find("activation_function: expected a string, got number 1") != std::string::npos);
  CHECK(refusal("eps", with("layer_norm_epsilon", "0"))
            .find("layer_norm_epsilon: expected a number in (0, 1), got 0") != std::string::npos);
  CHECK(refusal("eps_string", with("layer_norm_epsilon", "\"1e-5\""))
            .find("layer_norm_epsilon: expected a number, got string") != std::string::npos);
  CHECK(refusal("pdrop", with("resid_pdrop", "1.5"))
            .find("resid_pdrop: expected a number in [0, 1], got 1.5") != std::string::npos);
  CHECK(refusal("untied", with("tie_word_embeddings", "false"))
            .find("tie_word_embeddings: expected true (or absent)") != std::string::npos);
  CHECK(refusal("inner", with("n_inner", "100"))
            .find("n_inner: expected null or 4 * n_embd = 32 (the MLP's width), got 100") !=
        std::string::npos);
  CHECK(refusal("layer_scale", with("scale_attn_by_inverse_layer_idx", "true"))
            .find("scale_attn_by_inverse_layer_idx: expected false") != std::string::npos);
  CHECK(refusal("unscaled", with("scale_attn_weights", "false"))
            .find("scale_attn_weights: expected true") != std::string::npos);
  CHECK(refusal("cross", with("add_cross_attention", "true"))
            .find("add_cross_attention: expected false") != std::string::npos);
  CHECK(refusal("type", with("model_type", "\"bert\""))
            .find("model_type: expected \"gpt2\", got \"bert\"") != std::string::npos);
}

TEST_CASE("read_gpt2_config refuses a file that is not a JSON object of settings") {
  CHECK(refusal("not_json", "{\"n_embd\": 8,").find("not JSON") != std::string::npos);
  CHECK(refusal("array", "[1, 2]").find("expected a JSON object of settings, got array") !=
        std::string::npos);
  CHECK(refusal("deep", "{\"a\": " + std::string(100, '[') + std::string(100, ']') + "}")
            .find("nested more than 16 deep") != std::string::npos);
  const std::string path = config_file(
      "huge", "{" + kSizes + ", \"pad\": \"" + std::string(std::size_t(1) << 20, 'x') + "\"}");
  CHECK_THROWS_WITH_AS(read_gpt2_config(path), doctest::Contains("at most 1 MiB"), CheckpointError);
  CHECK_THROWS_WITH_AS(read_gpt2_config(path + ".missing"), doctest::Contains("cannot open"),
                       CheckpointError);
}
