// src/pretrained/gpt2_config.cpp: config.json read field by field (gpt2_config.hpp).
#include "tapegrad/pretrained/gpt2_config.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config_json.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::pretrained {

namespace {
using json = nlohmann::json;
using detail::shown;

// The refusal of a missing size names the five a GPT-2 config.json gives.
constexpr const char* kRequired =
    "a GPT-2 config.json gives n_embd, n_head, n_layer, n_positions and vocab_size";
}  // namespace

GPT2Config read_gpt2_config(const std::string& path) {
  const json root = detail::parse_config(path, "read_gpt2_config");
  const detail::Fields f(root, path, "read_gpt2_config", kRequired);
  GPT2Config c;
  c.vocab_size = f.integer("vocab_size", 1, GPT2Config::kMaxVocab);
  c.n_positions = f.integer("n_positions", 1, GPT2Config::kMaxPositions);
  c.n_embd = f.integer("n_embd", 1, GPT2Config::kMaxWidth);
  c.n_layer = f.integer("n_layer", 1, GPT2Config::kMaxLayers);
  c.n_head = f.integer("n_head", 1, c.n_embd);
  if (c.n_embd % c.n_head != 0)
    f.refuse("n_head", "expected a divisor of n_embd (" + std::to_string(c.n_embd) + "), got " +
                           std::to_string(c.n_head));
  c.layer_norm_epsilon = f.number("layer_norm_epsilon", 1e-5, 0.0, 1.0, /*open=*/true);
  c.activation_function = f.string("activation_function", "gelu_new");
  if (c.activation_function != "gelu_new" && c.activation_function != "gelu_pytorch_tanh" &&
      c.activation_function != "gelu")
    f.refuse("activation_function",
             "expected \"gelu_new\" (GPT-2's), \"gelu_pytorch_tanh\" (the same tanh GELU) or "
             "\"gelu\" (erf), got \"" +
                 c.activation_function + "\"");
  c.embd_pdrop = f.number("embd_pdrop", 0.1, 0.0, 1.0, /*open=*/false);
  c.attn_pdrop = f.number("attn_pdrop", 0.1, 0.0, 1.0, /*open=*/false);
  c.resid_pdrop = f.number("resid_pdrop", 0.1, 0.0, 1.0, /*open=*/false);
  f.boolean_must_be("tie_word_embeddings", true,
                    "expected true (or absent): tapegrad's GPT shares wte with the head, and an "
                    "untied lm_head cannot be loaded");
  f.boolean_must_be("scale_attn_weights", true,
                    "expected true (or absent): attention scaled by 1/sqrt(head size)");
  f.boolean_must_be("scale_attn_by_inverse_layer_idx", false,
                    "expected false (or absent): tapegrad's attention does not scale by the "
                    "layer's index");
  f.boolean_must_be("add_cross_attention", false,
                    "expected false (or absent): a decoder-only GPT has no cross-attention");
  if (const json* inner = f.find("n_inner"); inner && !inner->is_null()) {
    if (!inner->is_number_integer() || inner->get<std::int64_t>() != 4 * c.n_embd)
      f.refuse("n_inner", "expected null or 4 * n_embd = " + std::to_string(4 * c.n_embd) +
                              " (the MLP's width), got " + shown(*inner));
  }
  if (const std::string type = f.string("model_type", "gpt2"); type != "gpt2")
    f.refuse("model_type", "expected \"gpt2\", got \"" + type + "\"");
  return c;
}

nn::transformer::GPTConfig GPT2Config::gpt_config(double dropout) const {
  return nn::transformer::GPTConfig(vocab_size, n_positions)
      .n_layer(n_layer)
      .n_head(n_head)
      .n_embd(n_embd)
      .dropout(dropout)
      .norm_eps(layer_norm_epsilon)
      .gelu(activation_function == "gelu" ? "none" : "tanh");
}

std::string GPT2Config::to_json() const {
  // transformers' GPT2Config.to_json_string for GPT-2, with these sizes: the fields it writes
  // (but transformers_version and torch_dtype), so that the folder loads there as saved here.
  // GPT-2's <|endoftext|> is 50256; a model of a smaller vocabulary has no such token.
  const json end_of_text = vocab_size > 50256 ? json(50256) : json(nullptr);
  json j = {{"activation_function", activation_function},
            {"architectures", {"GPT2LMHeadModel"}},
            {"attn_pdrop", attn_pdrop},
            {"bos_token_id", end_of_text},
            {"embd_pdrop", embd_pdrop},
            {"eos_token_id", end_of_text},
            {"initializer_range", 0.02},
            {"layer_norm_epsilon", layer_norm_epsilon},
            {"model_type", "gpt2"},
            {"n_ctx", n_positions},
            {"n_embd", n_embd},
            {"n_head", n_head},
            {"n_inner", nullptr},
            {"n_layer", n_layer},
            {"n_positions", n_positions},
            {"reorder_and_upcast_attn", false},
            {"resid_pdrop", resid_pdrop},
            {"scale_attn_by_inverse_layer_idx", false},
            {"scale_attn_weights", true},
            {"summary_activation", nullptr},
            {"summary_first_dropout", 0.1},
            {"summary_proj_to_labels", true},
            {"summary_type", "cls_index"},
            {"summary_use_proj", true},
            {"tie_word_embeddings", true},
            {"use_cache", true},
            {"vocab_size", vocab_size}};
  return j.dump(2) + "\n";
}

GPT2Config gpt2_config_of(const nn::transformer::GPTConfig& config) {
  nn::transformer::validate(config);
  const auto refuse_choice = [](const std::string& what, const std::string& got,
                                const std::string& gpt2) {
    fail<ValueError>("gpt2_config_of: GPT-2's layout holds ", what, " \"", gpt2, "\" only, got \"",
                     got, "\"");
  };
  if (config.position() != "learned") refuse_choice("position", config.position(), "learned");
  if (config.norm() != "layernorm") refuse_choice("norm", config.norm(), "layernorm");
  if (config.mlp() != "gelu") refuse_choice("mlp", config.mlp(), "gelu");
  GPT2Config c;
  c.vocab_size = config.vocab_size();
  c.n_positions = config.block_size();
  c.n_embd = config.n_embd();
  c.n_layer = config.n_layer();
  c.n_head = config.n_head();
  c.layer_norm_epsilon = config.norm_eps();
  c.activation_function = config.gelu() == "tanh" ? "gelu_new" : "gelu";
  return c;
}

}  // namespace tapegrad::pretrained
