// src/pretrained/llama_config.cpp: a Llama folder's config.json read field by field, and written
// back (pretrained/llama.hpp).
#include <cmath>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "config_json.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/pretrained/llama.hpp"

namespace tapegrad::pretrained {

namespace {
using json = nlohmann::json;
using detail::shown;
namespace tt = nn::transformer;

constexpr const char* kWhere = "read_llama_config";
constexpr const char* kRequired =
    "a Llama config.json gives vocab_size, hidden_size, intermediate_size, num_hidden_layers and "
    "num_attention_heads";

// rope_scaling: null, absent, {"rope_type": "default"}, or one of the types implemented.
std::optional<tt::LlamaRopeScaling> read_rope_scaling(const detail::Fields& f) {
  const json* v = f.find("rope_scaling");
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_object())
    f.refuse("rope_scaling", "expected null or an object, got " + std::string(v->type_name()) +
                                 " " + shown(*v));
  // transformers reads "rope_type", or the older "type".
  const json* type = v->contains("rope_type") ? &v->at("rope_type")
                     : v->contains("type")     ? &v->at("type")
                                               : nullptr;
  if (!type || !type->is_string())
    f.refuse("rope_scaling", "expected a \"rope_type\" string, got " + shown(*v));
  const std::string name = type->get<std::string>();
  if (name == "default") return std::nullopt;
  if (name != "linear" && name != "llama3")
    f.refuse("rope_scaling",
             "rope_type \"" + name.substr(0, 40) +
                 "\" is not implemented (implemented: null or \"default\", \"linear\", "
                 "\"llama3\")");
  const auto number = [&](const char* field, double low, double high, bool open) {
    const json* x = v->contains(field) ? &v->at(field) : nullptr;
    const std::string name_of = std::string("rope_scaling.") + field;
    if (!x) f.refuse(name_of, "missing (rope_type \"" + name + "\" needs it)");
    if (!x->is_number())
      f.refuse(name_of, "expected a number, got " + std::string(x->type_name()) + " " + shown(*x));
    const double d = x->get<double>();
    if (!(open ? d > low && d < high : d >= low && d <= high))
      f.refuse(name_of, "expected a number in " + std::string(open ? "(" : "[") +
                            (low == 0 ? "0" : std::to_string(low)) + ", " +
                            (std::isinf(high) ? "inf" : std::to_string(high)) +
                            (open ? ")" : "]") + ", got " + shown(*x));
    return d;
  };
  tt::LlamaRopeScaling s;
  s.rope_type = name;
  const double inf = std::numeric_limits<double>::infinity();
  s.factor = number("factor", 0.0, inf, true);
  if (name == "llama3") {
    s.low_freq_factor = number("low_freq_factor", 0.0, inf, true);
    s.high_freq_factor = number("high_freq_factor", 0.0, inf, true);
    if (!(s.high_freq_factor > s.low_freq_factor))
      f.refuse("rope_scaling.high_freq_factor",
               "expected more than low_freq_factor " + shown(v->at("low_freq_factor")) + ", got " +
                   shown(v->at("high_freq_factor")));
    const json* L = v->contains("original_max_position_embeddings")
                        ? &v->at("original_max_position_embeddings")
                        : nullptr;
    if (!L || !L->is_number_integer() || L->get<std::int64_t>() < 1 ||
        L->get<std::int64_t>() > LlamaFolderConfig::kMaxPositions)
      f.refuse("rope_scaling.original_max_position_embeddings",
               "expected an integer in [1, " + std::to_string(LlamaFolderConfig::kMaxPositions) +
                   "], got " + (L ? shown(*L) : std::string("nothing")));
    s.original_max_position_embeddings = L->get<std::int64_t>();
  }
  return s;
}

// bos_token_id / eos_token_id: null, absent, an id, or (eos) a list of ids.
std::vector<std::int64_t> read_token_ids(const detail::Fields& f, const std::string& field,
                                         bool list_allowed, bool* was_list) {
  const json* v = f.find(field);
  if (!v || v->is_null()) return {};
  const auto id = [&](const json& x) {
    if (!x.is_number_integer() || x.get<std::int64_t>() < 0)
      f.refuse(field, "expected a token id (an integer >= 0)" +
                          std::string(list_allowed ? ", a list of them" : "") + " or null, got " +
                          shown(*v));
    return x.get<std::int64_t>();
  };
  if (v->is_array() && list_allowed) {
    if (v->size() > 1024) f.refuse(field, "expected at most 1024 ids, got " + shown(*v));
    std::vector<std::int64_t> ids;
    for (const json& x : *v) ids.push_back(id(x));
    if (was_list) *was_list = true;
    return ids;
  }
  return {id(*v)};
}
}  // namespace

LlamaFolderConfig read_llama_config(const std::string& path) {
  const json root = detail::parse_config(path, kWhere);
  const detail::Fields f(root, path, kWhere, kRequired);
  using C = LlamaFolderConfig;
  // model_type first: a GPT-2's or a Qwen2's config.json is no Llama's, whatever its sizes.
  const json* type = f.find("model_type");
  if (!type || !type->is_string() || type->get<std::string>() != "llama")
    f.refuse("model_type", "expected \"llama\", got " + (type ? shown(*type) : "nothing") +
                               " (this reader reads transformers' LlamaForCausalLM folders)");
  tt::LlamaConfig m;
  m.vocab_size(f.integer("vocab_size", 1, C::kMaxVocab));
  m.hidden_size(f.integer("hidden_size", 1, C::kMaxWidth));
  m.intermediate_size(f.integer("intermediate_size", 1, C::kMaxIntermediate));
  m.num_hidden_layers(f.integer("num_hidden_layers", 1, C::kMaxLayers));
  const std::int64_t H = f.integer("num_attention_heads", 1, C::kMaxHeads);
  m.num_attention_heads(H);
  if (const auto K = f.optional_integer("num_key_value_heads", 1, C::kMaxHeads)) {
    if (H % *K != 0)
      f.refuse("num_key_value_heads",
               "expected a divisor of num_attention_heads (" + std::to_string(H) +
                   "): each key/value head serves the same number of query heads, got " +
                   std::to_string(*K));
    m.num_key_value_heads(*K);
  }
  if (const auto d = f.optional_integer("head_dim", 2, C::kMaxHeadDim)) {
    if (*d % 2 != 0)
      f.refuse("head_dim",
               "expected an even head size (its columns turn in pairs), got " + std::to_string(*d));
    m.head_dim(*d);
  } else {
    if (m.hidden_size() % H != 0)
      f.refuse("num_attention_heads", "expected a divisor of hidden_size (" +
                                          std::to_string(m.hidden_size()) +
                                          ") when head_dim is not given, got " + std::to_string(H));
    if ((m.hidden_size() / H) % 2 != 0)
      f.refuse("num_attention_heads",
               "expected an even head size hidden_size / num_attention_heads (its columns turn in "
               "pairs), got " +
                   std::to_string(m.hidden_size()) + " / " + std::to_string(H) + " = " +
                   std::to_string(m.hidden_size() / H));
  }
  m.max_position_embeddings(
      f.optional_integer("max_position_embeddings", 1, C::kMaxPositions).value_or(2048));
  m.rms_norm_eps(f.number("rms_norm_eps", 1e-6, 0.0, 1.0, /*open=*/true));
  m.rope_theta(f.number("rope_theta", 10000.0, 0.0, 1e300, /*open=*/true));
  m.rope_scaling(read_rope_scaling(f));
  m.tie_word_embeddings(f.boolean("tie_word_embeddings", false));
  m.attention_bias(f.boolean("attention_bias", false));
  m.mlp_bias(f.boolean("mlp_bias", false));
  m.attention_dropout(f.number("attention_dropout", 0.0, 0.0, 1.0, /*open=*/false));
  m.initializer_range(f.number("initializer_range", 0.02, 0.0, 1e300, /*open=*/true));
  const std::string act = f.string("hidden_act", "silu");
  if (act != "silu")
    f.refuse("hidden_act", "expected \"silu\" (the Llama's SwiGLU gate), got \"" +
                               act.substr(0, 40) + "\"");
  m.hidden_act(act);
  LlamaFolderConfig out;
  out.model = m;
  const std::vector<std::int64_t> bos = read_token_ids(f, "bos_token_id", false, nullptr);
  if (!bos.empty()) out.bos_token_id = bos.front();
  out.eos_token_ids = read_token_ids(f, "eos_token_id", true, &out.eos_token_list);
  nn::transformer::validate(out.model);  // every field was checked above; this cannot refuse
  return out;
}

LlamaFolderConfig llama_folder_config(const tt::LlamaConfig& model) {
  tt::validate(model);
  LlamaFolderConfig out;
  out.model = model;
  return out;
}

std::string LlamaFolderConfig::to_json() const {
  // transformers' LlamaConfig.to_json_string with these values: the fields it writes (but
  // transformers_version), so that the folder loads there as saved here.
  const tt::LlamaConfig& m = model;
  json scaling = nullptr;
  if (const auto& s = m.rope_scaling()) {
    scaling = {{"rope_type", s->rope_type}, {"factor", s->factor}};
    if (s->rope_type == "llama3") {
      scaling["low_freq_factor"] = s->low_freq_factor;
      scaling["high_freq_factor"] = s->high_freq_factor;
      scaling["original_max_position_embeddings"] = s->original_max_position_embeddings;
    }
  }
  json eos = nullptr;
  if (eos_token_list)
    eos = eos_token_ids;
  else if (!eos_token_ids.empty())
    eos = eos_token_ids.front();
  const json j = {{"architectures", {"LlamaForCausalLM"}},
                  {"attention_bias", m.attention_bias()},
                  {"attention_dropout", m.attention_dropout()},
                  {"bos_token_id", bos_token_id ? json(*bos_token_id) : json(nullptr)},
                  {"eos_token_id", eos},
                  {"head_dim", m.head_size()},
                  {"hidden_act", m.hidden_act()},
                  {"hidden_size", m.hidden_size()},
                  {"initializer_range", m.initializer_range()},
                  {"intermediate_size", m.intermediate_size()},
                  {"max_position_embeddings", m.max_position_embeddings()},
                  {"mlp_bias", m.mlp_bias()},
                  {"model_type", "llama"},
                  {"num_attention_heads", m.num_attention_heads()},
                  {"num_hidden_layers", m.num_hidden_layers()},
                  {"num_key_value_heads", m.kv_heads()},
                  {"pretraining_tp", 1},
                  {"rms_norm_eps", m.rms_norm_eps()},
                  {"rope_scaling", scaling},
                  {"rope_theta", m.rope_theta()},
                  {"tie_word_embeddings", m.tie_word_embeddings()},
                  {"torch_dtype", "float32"},
                  {"use_cache", true},
                  {"vocab_size", m.vocab_size()}};
  return j.dump(2) + "\n";
}

std::string read_model_type(const std::string& folder) {
  const std::string path = (std::filesystem::path(folder) / "config.json").string();
  const json root = detail::parse_config(path, "read_model_type");
  const detail::Fields f(root, path, "read_model_type", "");
  return f.string("model_type", "");
}

}  // namespace tapegrad::pretrained
