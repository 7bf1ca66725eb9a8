// src/pretrained/lora_adapter.cpp: PEFT's adapter folder <-> the LoRA adapters of a tapegrad
// model (pretrained/lora_adapter.hpp).
//
// A key of adapter_model.safetensors is "base_model.model." + the module's path + ".lora_A.weight"
// (or lora_B): PEFT's PeftModel holds a LoraModel as base_model, which holds the transformers
// model as model, and get_peft_model_state_dict removes the adapter's name (".default") from
// the keys. The module path is tapegrad's own, which is Hugging Face's for the Llama and GPT-2.
#include "tapegrad/pretrained/lora_adapter.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "tapegrad/autograd/grad_mode.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/transformer/gpt.hpp"
#include "config_json.hpp"
#include "weight_checks.hpp"

namespace tapegrad::pretrained {

namespace fs = std::filesystem;
using json = nlohmann::json;
using detail::shown;

namespace {

constexpr const char* kConfigFile = "adapter_config.json";
constexpr const char* kWeightsFile = "adapter_model.safetensors";
constexpr const char* kPrefix = "base_model.model.";
constexpr const char* kAllLinear = "all-linear";  // PEFT's INCLUDE_LINEAR_LAYERS_SHORTHAND

[[noreturn]] void refuse(const std::string& where, const std::string& why,
                         const char* kind = "InvalidCheckpoint") {
  throw CheckpointError("load_lora_adapter: '" + where + "': " + why, kind);
}

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// A field left at PEFT's "off": absent, null, false, or an empty string, list or object.
bool unset(const json* v) {
  return v == nullptr || v->is_null() || (v->is_boolean() && !v->get<bool>()) ||
         (v->is_string() && v->get_ref<const std::string&>().empty()) ||
         ((v->is_array() || v->is_object()) && v->empty());
}

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The Linears of a model that an adapter may sit on: not an adapter's own lora_A or lora_B.
std::vector<std::pair<std::string, const nn::Linear*>> base_linears(const nn::Module& model) {
  std::vector<std::pair<std::string, const nn::Linear*>> out;
  for (const auto& [path, module] : model.named_modules()) {
    const auto* linear = dynamic_cast<const nn::Linear*>(module);
    if (linear == nullptr || path.ends_with(".lora_A") || path.ends_with(".lora_B") ||
        path == "lora_A" || path == "lora_B")
      continue;
    out.emplace_back(path, linear);
  }
  return out;
}

// A number as PEFT's config holds it: lora_alpha is an int there, 8 and not 8.0.
json number_json(double x) {
  if (std::isfinite(x) && x == std::floor(x) && std::abs(x) < 9.0e15)
    return json(static_cast<std::int64_t>(x));
  return json(x);
}

}  // namespace

// ---- the config ---------------------------------------------------------------------------------

nn::LoRAOptions LoRAAdapterConfig::options() const {
  return nn::LoRAOptions(r)
      .lora_alpha(lora_alpha)
      .lora_dropout(lora_dropout)
      .use_rslora(use_rslora);
}

bool LoRAAdapterConfig::targets(const std::string& path) const {
  if (target_modules_pattern) {
    if (lower(*target_modules_pattern) == kAllLinear) return path != "lm_head";
    // PEFT's match_target_against_key: re.fullmatch(target_modules, key).
    return std::regex_match(path, std::regex(*target_modules_pattern, std::regex::ECMAScript));
  }
  return std::any_of(target_modules.begin(), target_modules.end(),
                     [&](const std::string& t) { return nn::matches_target(path, t); });
}

std::string LoRAAdapterConfig::to_json() const {
  json j = json::object();  // std::map: the keys sorted, as json.dumps(sort_keys=True)
  j["alpha_pattern"] = json::object();
  j["auto_mapping"] = nullptr;
  j["base_model_name_or_path"] =
      base_model_name_or_path.empty() ? json(nullptr) : json(base_model_name_or_path);
  j["bias"] = "none";
  j["fan_in_fan_out"] = fan_in_fan_out;
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  j["layers_pattern"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["lora_alpha"] = number_json(lora_alpha);
  j["lora_dropout"] = lora_dropout;
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = r;
  j["rank_pattern"] = json::object();
  j["revision"] = nullptr;
  j["target_modules"] =
      target_modules_pattern ? json(*target_modules_pattern) : json(target_modules);
  j["task_type"] = task_type.empty() ? json(nullptr) : json(task_type);
  j["use_dora"] = false;
  j["use_rslora"] = use_rslora;
  return j.dump(2);
}

LoRAAdapterConfig read_lora_adapter_config(const std::string& path) {
  constexpr const char* where = "read_lora_adapter_config";
  const json root = detail::parse_config(path, where);
  const detail::Fields f(root, path, where, "a LoRA adapter_config.json gives r");
  LoRAAdapterConfig c;

  const json* type = f.find("peft_type");
  if (type == nullptr || !type->is_string())
    f.refuse("peft_type", "expected \"LORA\", got " +
                              (type ? std::string(type->type_name()) + " " + shown(*type)
                                    : std::string("none (a PEFT adapter_config.json names its "
                                                  "method)")));
  if (type->get<std::string>() != "LORA")
    f.refuse("peft_type", "expected \"LORA\", got " + shown(*type) +
                              ": only LoRA adapters are implemented (not prefix tuning, IA3, "
                              "AdaLoRA, LoHa, LoKr, ...)");
  const json* task = f.find("task_type");
  if (task != nullptr && !task->is_null()) {
    if (!task->is_string() || task->get<std::string>() != "CAUSAL_LM")
      f.refuse("task_type", "expected \"CAUSAL_LM\" or null, got " + shown(*task) +
                                ": the adapter is for another head than a language model's");
    c.task_type = "CAUSAL_LM";
  } else {
    c.task_type = "";
  }

  c.r = f.optional_integer("r", 1, std::int64_t(1) << 20).value_or(8);
  c.lora_alpha = f.number("lora_alpha", 8.0, 0.0, std::numeric_limits<double>::max(), true);
  c.lora_dropout = f.number("lora_dropout", 0.0, 0.0, 1.0, false);
  c.use_rslora = f.boolean("use_rslora", false);
  c.fan_in_fan_out = f.boolean("fan_in_fan_out", false);
  const std::string bias = f.string("bias", "none");
  if (bias != "none")
    f.refuse("bias", "expected \"none\", got \"" + bias.substr(0, 40) +
                         "\": an adapter with bias \"all\" or \"lora_only\" also trains the base "
                         "model's biases, which tapegrad does not load from an adapter");
  if (const json* base = f.find("base_model_name_or_path"); base && !base->is_null()) {
    if (!base->is_string())
      f.refuse("base_model_name_or_path",
               "expected a string or null, got " + std::string(base->type_name()));
    c.base_model_name_or_path = base->get<std::string>();
  }

  const json* targets = f.find("target_modules");
  if (unset(targets))
    f.refuse("target_modules",
             "expected the names of the adapted modules (a list such as [\"q_proj\", \"v_proj\"], "
             "or a pattern), got " +
                 (targets ? shown(*targets) : std::string("none")));
  if (targets->is_string()) {
    const std::string pattern = targets->get<std::string>();
    if (lower(pattern) != kAllLinear) {
      try {
        std::regex(pattern, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        f.refuse("target_modules", "the pattern " + shown(*targets) +
                                       " is not a regular expression std::regex reads (" +
                                       e.what() + ")");
      }
    }
    c.target_modules_pattern = pattern;
  } else if (targets->is_array()) {
    for (const json& t : *targets) {
      if (!t.is_string() || t.get<std::string>().empty())
        f.refuse("target_modules", "expected a list of module names, got an element " + shown(t));
      c.target_modules.push_back(t.get<std::string>());
    }
  } else {
    f.refuse("target_modules", "expected a list of module names or a pattern, got " +
                                   std::string(targets->type_name()) + " " + shown(*targets));
  }

  // What changes the adapter's arithmetic, or which modules it covers, in ways not implemented.
  const std::vector<std::pair<const char*, const char*>> not_implemented = {
      {"use_dora", "DoRA (a magnitude vector beside A and B)"},
      {"lora_bias", "a bias on lora_B"},
      {"rank_pattern", "a rank per module"},
      {"alpha_pattern", "an alpha per module"},
      {"layers_to_transform", "adapting some layers only"},
      {"modules_to_save", "whole modules trained beside the adapters"},
      {"exclude_modules", "modules excluded from the targets"},
      {"layer_replication", "replicated layers"},
      {"trainable_token_indices", "trained rows of the token table"},
      {"target_parameters", "adapters on parameters rather than modules"},
      {"alora_invocation_tokens", "activated LoRA"},
      {"use_qalora", "QALoRA"},
  };
  for (const auto& [field, what] : not_implemented)
    if (const json* v = f.find(field); !unset(v))
      f.refuse(field, std::string("expected it unset (null, false or empty), got ") + shown(*v) +
                          ": " + what + " is not implemented");
  if (const json* init = f.find("init_lora_weights"); init && init->is_string()) {
    const std::string name = init->get<std::string>();
    if (name != "gaussian" && name != "eva")
      f.refuse("init_lora_weights",
               "expected true, false, \"gaussian\" or \"eva\", got " + shown(*init) +
                   ": such an adapter was trained against base weights its initialisation changed "
                   "(PiSSA, OLoRA, CorDA, LoftQ); have PEFT convert it to a plain LoRA when "
                   "saving (path_initial_model_for_weight_conversion)");
  }
  // A later PEFT's new variant is switched on by a flag of its own: refused rather than ignored.
  static const std::set<std::string> harmless_true = {
      "inference_mode", "fan_in_fan_out", "use_rslora", "init_lora_weights", "ensure_weight_tying"};
  for (const auto& [field, value] : root.items())
    if (value.is_boolean() && value.get<bool>() && !harmless_true.count(field))
      f.refuse(field, "expected false, got true: a setting this reader does not implement");
  return c;
}

LoRAAdapterConfig lora_adapter_config_of(const nn::Module& model,
                                         const std::string& base_model_name_or_path) {
  const auto layers = nn::lora_layers(model);
  check<ValueError>(!layers.empty(),
                    "lora_adapter_config_of: expected a model with LoRA adapters "
                    "(nn::add_lora, load_lora_adapter), got none");
  const nn::LoRAOptions& first = layers.front().second->lora_options();
  for (const auto& [path, layer] : layers) {
    const nn::LoRAOptions& o = layer->lora_options();
    if (o.r() != first.r() || o.lora_alpha() != first.lora_alpha() ||
        o.lora_dropout() != first.lora_dropout() || o.use_rslora() != first.use_rslora())
      fail<ValueError>(
          "lora_adapter_config_of: expected every adapter to have the same r, "
          "lora_alpha, lora_dropout and use_rslora (PEFT's file holds one of each), "
          "got r ",
          first.r(), ", lora_alpha ", py_float(first.lora_alpha()), " at '", layers.front().first,
          "' and r ", o.r(), ", lora_alpha ", py_float(o.lora_alpha()), " at '", path, "'");
  }
  LoRAAdapterConfig c;
  c.r = first.r();
  c.lora_alpha = first.lora_alpha();
  c.lora_dropout = first.lora_dropout();
  c.use_rslora = first.use_rslora();
  c.base_model_name_or_path = base_model_name_or_path;
  c.fan_in_fan_out = dynamic_cast<const nn::transformer::GPT*>(&model) != nullptr;
  // For each adapted layer, the shortest end of its path that names adapted layers only: "q_proj"
  // when every q_proj is adapted, "attn.c_proj" when the attention's c_proj is but the MLP's is
  // not. PEFT then adapts exactly these layers again.
  const auto linears = base_linears(model);
  std::set<std::string> adapted, names;
  for (const auto& [path, layer] : layers) adapted.insert(path);
  const auto only_adapted = [&](const std::string& suffix) {
    return std::all_of(linears.begin(), linears.end(), [&](const auto& l) {
      return !nn::matches_target(l.first, suffix) || adapted.count(l.first) > 0;
    });
  };
  for (const std::string& path : adapted) {
    std::string chosen = path;
    std::size_t dot = path.rfind('.');  // from the last component to the whole path
    while (true) {
      const std::string suffix = dot == std::string::npos ? path : path.substr(dot + 1);
      if (only_adapted(suffix)) {
        chosen = suffix;
        break;
      }
      if (dot == std::string::npos) break;
      dot = dot == 0 ? std::string::npos : path.rfind('.', dot - 1);
    }
    names.insert(chosen);
  }
  c.target_modules.assign(names.begin(), names.end());
  return c;
}

// ---- writing ------------------------------------------------------------------------------------

void save_lora_adapter(const nn::Module& model, const std::string& folder,
                       const std::string& base_model_name_or_path) {
  const LoRAAdapterConfig config = lora_adapter_config_of(model, base_model_name_or_path);
  const fs::path dir(folder);
  std::error_code made, is_dir;
  fs::create_directories(dir, made);
  if (!fs::is_directory(dir, is_dir))
    throw CheckpointError("save_lora_adapter: cannot make the folder '" + folder + "'" +
                              (made ? ": " + made.message() : ": a file of that name is there"),
                          "IoError");
  io::SafetensorsFile f;
  for (const auto& [path, layer] : nn::lora_layers(model)) {
    f.add(kPrefix + path + ".lora_A.weight", Array(layer->lora_A->weight.data()));
    f.add(kPrefix + path + ".lora_B.weight", Array(layer->lora_B->weight.data()));
  }
  f.set_metadata("format", "pt");  // what PEFT's save_pretrained writes
  // The weights last: a save cut short leaves a folder that load_lora_adapter refuses (no
  // adapter_model.safetensors), never matrices beside another adapter's config.
  io::write_file_atomic((dir / kConfigFile).string(), config.to_json(), "save_lora_adapter");
  io::save_safetensors((dir / kWeightsFile).string(), f);
}

// ---- reading ------------------------------------------------------------------------------------

LoRAAdapterConfig load_lora_adapter(nn::Module& model, const std::string& folder,
                                    std::shared_ptr<Generator> generator) {
  const fs::path dir(folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    refuse(folder,
           present(dir) ? "expected a folder (adapter_config.json, adapter_model.safetensors), "
                          "got a file"
                        : "no such folder",
           "IoError");
  if (!present(dir / kConfigFile))
    refuse(folder,
           "has no adapter_config.json, which gives the adapter's r, lora_alpha and "
           "target_modules",
           "IoError");
  if (!present(dir / kWeightsFile)) {
    if (present(dir / "adapter_model.bin"))
      refuse(folder,
             "holds adapter_model.bin and no adapter_model.safetensors. tapegrad reads "
             "safetensors only and never unpickles (loading a pickle can run any code it "
             "holds). Convert it where PEFT is installed: load it with "
             "PeftModel.from_pretrained, then save_pretrained(DIR, safe_serialization=True)");
    refuse(folder,
           "has no adapter_model.safetensors (a PEFT adapter folder holds "
           "adapter_config.json and adapter_model.safetensors)",
           "IoError");
  }
  const LoRAAdapterConfig config = read_lora_adapter_config((dir / kConfigFile).string());
  const io::SafetensorsReader file((dir / kWeightsFile).string());
  const std::string& path = file.path();

  // Every key names an A or a B of a Linear the config targets, with shapes that fit it.
  std::map<std::string, nn::Linear*> linears;
  for (const auto& [p, module] : model.named_modules())
    if (auto* linear = dynamic_cast<nn::Linear*>(module)) linears.emplace(p, linear);
  struct Found {
    nn::Linear* layer = nullptr;
    const io::SafetensorsReader::Info* a = nullptr;
    const io::SafetensorsReader::Info* b = nullptr;
  };
  std::map<std::string, Found> found;  // by module path
  const auto r = std::size_t(config.r);
  for (const io::SafetensorsReader::Info& t : file.tensors()) {
    const std::string& key = t.name;
    if (!key.starts_with(kPrefix))
      refuse(path, "unexpected key '" + key + "': expected PEFT's " + kPrefix +
                       "<module path>.lora_A.weight and .lora_B.weight");
    const std::string rest = key.substr(std::string(kPrefix).size());
    const bool is_a = rest.ends_with(".lora_A.weight"), is_b = rest.ends_with(".lora_B.weight");
    if (!is_a && !is_b) {
      std::string why = "expected PEFT's " + std::string(kPrefix) +
                        "<module path>.lora_A.weight and .lora_B.weight";
      for (const char* part : {".lora_A.", ".lora_B."})
        if (const std::size_t at = rest.find(part);
            at != std::string::npos && rest.ends_with(".weight") &&
            rest.size() > at + 8 + std::string(".weight").size())
          why = "it holds an adapter's name ('" +
                rest.substr(at + 8, rest.size() - at - 8 - std::string(".weight").size()) +
                "'), which PEFT's saved files leave out: rename the key without it";
      if (rest.find("lora_embedding_") != std::string::npos)
        why = "an adapter of an Embedding, which is not implemented";
      if (rest.find("lora_magnitude_vector") != std::string::npos)
        why = "DoRA's magnitude vector, which is not implemented";
      if (rest.ends_with(".lora_B.bias")) why = "a bias on lora_B, which is not implemented";
      refuse(path, "unexpected key '" + key + "': " + why);
    }
    const std::string module = rest.substr(0, rest.size() - std::string(".lora_A.weight").size());
    const auto it = linears.find(module);
    if (it == linears.end()) {
      const auto modules = model.named_modules();
      const bool exists = std::any_of(modules.begin(), modules.end(),
                                      [&](const auto& m) { return m.first == module; });
      refuse(path, "'" + key + "' names the module '" + module + "', which " +
                       (exists ? std::string("is not a Linear (adapters of other layers are not "
                                             "implemented)")
                               : "the model does not have: the adapter is for another base "
                                 "model"));
    }
    if (!config.targets(module))
      refuse(path, "'" + key + "' adapts '" + module +
                       "', which adapter_config.json's target_modules does not name");
    if (!detail::is_float(t.dtype))
      refuse(path, "'" + key + "' holds " + std::string(io::dtype_name(t.dtype)) +
                       ", expected floating-point matrices (F32, F16, BF16 or F64)");
    nn::Linear& layer = *it->second;
    if (layer.has_lora())
      refuse(path, "'" + module + "' has an adapter already; load adapters onto the base model");
    const auto in = std::size_t(layer.options().in_features()),
               out = std::size_t(layer.options().out_features());
    const Shape want = is_a ? Shape{r, in} : Shape{out, r};
    if (t.shape.size() == 2 && t.shape != want && t.shape[is_a ? 1 : 0] == (is_a ? in : out) &&
        t.shape[is_a ? 0 : 1] != r)
      refuse(path, "'" + key + "' is " + str(t.shape) + ": its r " +
                       std::to_string(t.shape[is_a ? 0 : 1]) + " disagrees with r " +
                       std::to_string(r) + " in adapter_config.json");
    if (t.shape != want)
      refuse(path, "'" + key + "' is " + str(t.shape) + ", expected " + str(want) +
                       (is_a ? " (r, in_features)" : " (out_features, r)") + " to fit " +
                       layer.context() + " (in_features " + std::to_string(in) + ", out_features " +
                       std::to_string(out) + ")");
    Found& slot = found[module];
    slot.layer = &layer;
    (is_a ? slot.a : slot.b) = &t;
  }
  if (found.empty())
    refuse(path, "holds no adapter matrices (expected " + std::string(kPrefix) +
                     "<module path>.lora_A.weight and .lora_B.weight)");
  for (const auto& [module, slot] : found)
    if (slot.a == nullptr || slot.b == nullptr)
      refuse(path, "missing key '" + std::string(kPrefix) + module +
                       (slot.a ? ".lora_B.weight" : ".lora_A.weight") + "' (" + module +
                       " has only one of its two matrices)");
  for (const auto& [module, layer] : base_linears(model))
    if (config.targets(module) && !found.count(module))
      refuse(path, "missing key '" + std::string(kPrefix) + module +
                       ".lora_A.weight': adapter_config.json's target_modules names '" + module +
                       "', but the file holds no adapter for it");

  // The matrices, read and checked before the model changes.
  struct Matrices {
    nn::Linear* layer;
    Array a, b;
  };
  std::vector<Matrices> matrices;
  for (const auto& [module, slot] : found) {
    Matrices m{slot.layer, Array::from_shape(slot.a->shape), Array::from_shape(slot.b->shape)};
    for (const auto& [info, values] : {std::pair{slot.a, &m.a}, std::pair{slot.b, &m.b}}) {
      file.read_float(info->name, std::span<float>(values->data(), values->size()));
      if (!detail::all_finite(std::span<const float>(values->data(), values->size())))
        refuse(path, "'" + info->name + "' holds a value that is not finite");
    }
    matrices.push_back(std::move(m));
  }

  const std::shared_ptr<Generator> gen = generator ? std::move(generator) : default_generator();
  model.requires_grad_(false);  // PEFT's bias "none": only the adapters train
  autograd::NoGradGuard no_grad;
  nn::SkipInitGuard skip;  // A is read just below: nothing to draw
  for (Matrices& m : matrices) {
    m.layer->add_lora(config.options(), gen);
    m.layer->lora_A->weight.mutable_data() = std::move(m.a);
    m.layer->lora_B->weight.mutable_data() = std::move(m.b);
  }
  return config;
}

}  // namespace tapegrad::pretrained
