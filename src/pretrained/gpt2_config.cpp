// src/pretrained/gpt2_config.cpp: config.json read field by field (gpt2_config.hpp).
#include "tapegrad/pretrained/gpt2_config.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tapegrad/core/errors.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::pretrained {

namespace {
using json = nlohmann::json;

// config.json is a few hundred bytes; a megabyte is no config.
constexpr std::size_t kMaxConfigBytes = std::size_t(1) << 20;

// A JSON value as the message shows it: at most 40 characters.
std::string shown(const json& v) {
  const std::string text = v.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// Reads the fields of one config.json; every refusal names the file and the field.
class Fields {
 public:
  Fields(const json& root, const std::string& path) : root_(root), path_(path) {}

  [[noreturn]] void refuse(const std::string& field, const std::string& message) const {
    throw CheckpointError("read_gpt2_config: '" + path_ + "': " + field + ": " + message,
                          "InvalidConfig");
  }
  const json* find(const std::string& field) const {
    const auto it = root_.find(field);
    return it == root_.end() ? nullptr : &*it;
  }
  // A required integer in [low, high]. JSON's 768.0 is a float and "768" a string: both refused.
  std::int64_t integer(const std::string& field, std::int64_t low, std::int64_t high) const {
    const json* v = find(field);
    if (!v)
      refuse(field,
             "missing (a GPT-2 config.json gives n_embd, n_head, n_layer, n_positions and "
             "vocab_size)");
    if (!v->is_number_integer())
      refuse(field, "expected an integer, got " + std::string(v->type_name()) + " " + shown(*v));
    const bool in_range = v->is_number_unsigned()
                              ? v->get<std::uint64_t>() <= std::uint64_t(high) &&
                                    v->get<std::uint64_t>() >= std::uint64_t(low)
                              : v->get<std::int64_t>() >= low && v->get<std::int64_t>() <= high;
    if (!in_range)
      refuse(field, "expected an integer in [" + std::to_string(low) + ", " + std::to_string(high) +
                        "], got " + shown(*v));
    return v->get<std::int64_t>();
  }
  // An optional number in (low, high) or [low, high]; `fallback` when absent.
  double number(const std::string& field, double fallback, double low, double high,
                bool open) const {
    const json* v = find(field);
    if (!v) return fallback;
    if (!v->is_number())
      refuse(field, "expected a number, got " + std::string(v->type_name()) + " " + shown(*v));
    const double x = v->get<double>();
    if (!(open ? x > low && x < high : x >= low && x <= high)) {
      std::ostringstream range;
      range << (open ? "(" : "[") << low << ", " << high << (open ? ")" : "]");
      refuse(field, "expected a number in " + range.str() + ", got " + shown(*v));
    }
    return x;
  }
  // An optional boolean that must have `required` (transformers' default) when present.
  void boolean_must_be(const std::string& field, bool required, const std::string& why) const {
    const json* v = find(field);
    if (!v) return;
    if (!v->is_boolean())
      refuse(field, "expected a boolean, got " + std::string(v->type_name()) + " " + shown(*v));
    if (v->get<bool>() != required) refuse(field, why);
  }
  std::string string(const std::string& field, const std::string& fallback) const {
    const json* v = find(field);
    if (!v) return fallback;
    if (!v->is_string())
      refuse(field, "expected a string, got " + std::string(v->type_name()) + " " + shown(*v));
    return v->get<std::string>();
  }

 private:
  const json& root_;
  const std::string& path_;
};

json parse_config(const std::string& path) {
  const auto refuse = [&](const std::string& why) {
    throw CheckpointError("read_gpt2_config: '" + path + "': " + why, "InvalidConfig");
  };
  std::string text;
  try {
    text = io::read_file(path, "read_gpt2_config", kMaxConfigBytes);
  } catch (const CheckpointError& e) {
    if (std::string(e.what()).find("expected at most") == std::string::npos) throw;
    refuse("expected a config.json of at most 1 MiB (1048576 bytes): " + std::string(e.what()));
  }
  // Nesting deeper than a few levels is no GPT-2 config ("task_specific_params" nests 3 deep);
  // refusing it as it is met bounds the parser's work on a hostile file.
  struct TooDeep {};
  const json::parser_callback_t watch = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= 16)
      throw TooDeep{};
    return true;
  };
  json root;
  try {
    root = json::parse(text, watch);
  } catch (const TooDeep&) {
    refuse("expected a JSON object of settings, got values nested more than 16 deep");
  } catch (const json::exception& e) {
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    refuse("not JSON: " + why);
  }
  if (!root.is_object())
    refuse("expected a JSON object of settings, got " + std::string(root.type_name()));
  return root;
}
}  // namespace

GPT2Config read_gpt2_config(const std::string& path) {
  const json root = parse_config(path);
  const Fields f(root, path);
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
