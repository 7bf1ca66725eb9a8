// src/pretrained/llama.cpp: a Llama's Hugging Face folder <-> tapegrad's LlamaForCausalLM
// (pretrained/llama.hpp).
//
// The model's parameter names ARE the file's keys (transformers' LlamaForCausalLM names), so one
// table, llama_weights(), lists what a file of a config holds and with which shapes, and a tensor
// is read straight into the parameter of the same name. A sharded checkpoint is the same keys
// spread over several files, which the index maps.
#include "tapegrad/pretrained/llama.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "tapegrad/autograd/grad_mode.hpp"
#include "tapegrad/core/memory.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "config_json.hpp"
#include "weight_checks.hpp"

namespace tapegrad::pretrained {

namespace fs = std::filesystem;
namespace tt = nn::transformer;
using detail::all_finite;
using detail::is_float;
using detail::prefault;

namespace {

// One tensor of a Llama's checkpoint: its key (the parameter's name) and shape.
struct Weight {
  std::string key;
  Shape shape;
};

// Every parameter of a LlamaForCausalLM of config c, in the model's order, as a file holds it.
std::vector<Weight> llama_weights(const tt::LlamaConfig& c) {
  const auto V = std::size_t(c.vocab_size()), C = std::size_t(c.hidden_size()),
             F = std::size_t(c.intermediate_size()), H = std::size_t(c.num_attention_heads()),
             K = std::size_t(c.kv_heads()), d = std::size_t(c.head_size());
  std::vector<Weight> w = {{"model.embed_tokens.weight", {V, C}}};
  for (std::int64_t i = 0; i < c.num_hidden_layers(); ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    for (const auto& [name, out, in] : {std::tuple{"q_proj", H * d, C}, std::tuple{"k_proj", K * d, C},
                                        std::tuple{"v_proj", K * d, C}, std::tuple{"o_proj", C, H * d}}) {
      w.push_back({layer + "self_attn." + name + ".weight", {out, in}});
      if (c.attention_bias()) w.push_back({layer + "self_attn." + name + ".bias", {out}});
    }
    for (const auto& [name, out, in] :
         {std::tuple{"gate_proj", F, C}, std::tuple{"up_proj", F, C}, std::tuple{"down_proj", C, F}}) {
      w.push_back({layer + "mlp." + name + ".weight", {out, in}});
      if (c.mlp_bias()) w.push_back({layer + "mlp." + name + ".bias", {out}});
    }
    w.push_back({layer + "input_layernorm.weight", {C}});
    w.push_back({layer + "post_attention_layernorm.weight", {C}});
  }
  w.push_back({"model.norm.weight", {C}});
  if (!c.tie_word_embeddings()) w.push_back({"lm_head.weight", {V, C}});
  return w;
}

// model.layers.<i>.self_attn.rotary_emb.inv_freq (i < layers) and model.rotary_emb.inv_freq: the
// rotary frequencies older transformers saved as buffers. The model computes its own.
bool is_inv_freq_buffer(const std::string& key, std::int64_t layers) {
  if (key == "model.rotary_emb.inv_freq") return true;
  const std::string head = "model.layers.", tail = ".self_attn.rotary_emb.inv_freq";
  if (!key.starts_with(head) || !key.ends_with(tail) || key.size() <= head.size() + tail.size())
    return false;
  const std::string index = key.substr(head.size(), key.size() - head.size() - tail.size());
  if (index.size() > 9 || (index.size() > 1 && index[0] == '0') ||
      !std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return false;
  return std::stoll(index) < layers;
}

[[noreturn]] void refuse(const std::string& where, const std::string& why,
                         const char* kind = "InvalidCheckpoint") {
  throw CheckpointError("load_llama: '" + where + "': " + why, kind);
}

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// The sizes of a model against those of a config.
bool same_sizes(const tt::LlamaConfig& a, const tt::LlamaConfig& b) {
  return a.vocab_size() == b.vocab_size() && a.hidden_size() == b.hidden_size() &&
         a.intermediate_size() == b.intermediate_size() &&
         a.num_hidden_layers() == b.num_hidden_layers() &&
         a.num_attention_heads() == b.num_attention_heads() && a.kv_heads() == b.kv_heads() &&
         a.head_size() == b.head_size() && a.tie_word_embeddings() == b.tie_word_embeddings() &&
         a.attention_bias() == b.attention_bias() && a.mlp_bias() == b.mlp_bias();
}

std::string sizes_text(const tt::LlamaConfig& c) {
  return "vocab_size " + std::to_string(c.vocab_size()) + ", hidden_size " +
         std::to_string(c.hidden_size()) + ", intermediate_size " +
         std::to_string(c.intermediate_size()) + ", num_hidden_layers " +
         std::to_string(c.num_hidden_layers()) + ", num_attention_heads " +
         std::to_string(c.num_attention_heads()) + ", num_key_value_heads " +
         std::to_string(c.kv_heads()) + ", head_dim " + std::to_string(c.head_size()) +
         ", tie_word_embeddings " + (c.tie_word_embeddings() ? "true" : "false");
}

// The index's file names must be plain names of files in the folder: "model-00001-of-00002.
// safetensors", never "../x", "/etc/x" or "sub/x", so that an index read from anywhere cannot
// make the loader open a file outside its folder.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}
}  // namespace

// ---- the files ----------------------------------------------------------------------------------

struct LlamaWeights::Shards {
  std::vector<io::SafetensorsReader> files;  // model.safetensors, or the shards in the index's order
  bool tied_lm_head_in_file = false;         // lm_head.weight stored although tied
  std::size_t lm_head_file = 0;
};

LlamaWeights::LlamaWeights(LlamaWeights&&) noexcept = default;
LlamaWeights::~LlamaWeights() = default;

std::vector<std::string> LlamaWeights::files() const {
  std::vector<std::string> out;
  for (const auto& f : shards_->files) out.push_back(f.path());
  return out;
}

LlamaWeights::LlamaWeights(const std::string& folder, const tt::LlamaConfig& config)
    : shards_(std::make_unique<Shards>()), config_(config) {
  tt::validate(config_);
  const fs::path dir(folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    refuse(folder,
           present(dir) ? "expected a folder (config.json, model.safetensors), got a file"
                        : "no such folder",
           "IoError");
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  // Where each key is: (file, position in files).
  std::vector<std::pair<std::string, std::size_t>> keys;
  if (present(single)) {
    shards_->files.emplace_back(single.string());
    for (const auto& t : shards_->files.back().tensors()) keys.emplace_back(t.name, 0);
  } else if (present(index)) {
    using json = nlohmann::json;
    const std::string path = index.string();
    json root;
    try {
      root = json::parse(io::read_file(path, "load_llama", std::uint64_t(64) << 20));
    } catch (const json::exception& e) {
      refuse(path, std::string("not JSON: ") + e.what());
    }
    if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object())
      refuse(path, "expected a JSON object with a \"weight_map\" object of key -> file name, got " +
                       detail::shown(root));
    std::map<std::string, std::size_t> file_index;  // file name -> position in files
    std::map<std::string, std::size_t> mapped;      // key -> position of the file the index names
    for (const auto& [key, file] : root["weight_map"].items()) {
      if (!file.is_string() || !plain_file_name(file.get<std::string>()))
        refuse(path, "weight_map['" + key + "']: expected the name of a file in the folder, got " +
                         detail::shown(file));
      const std::string name = file.get<std::string>();
      if (!file_index.count(name)) {
        if (file_index.size() >= 100000) refuse(path, "names more than 100000 files");
        if (!present(dir / name))
          refuse(path, "weight_map['" + key + "'] names '" + name + "', which is not in the folder",
                 "IoError");
        file_index.emplace(name, shards_->files.size());
        shards_->files.emplace_back((dir / name).string());
      }
      mapped.emplace(key, file_index.at(name));
    }
    if (mapped.empty()) refuse(path, "the weight_map is empty");
    // Every tensor of every shard is where the index says, and nowhere else.
    std::map<std::string, std::size_t> found;
    for (std::size_t f = 0; f < shards_->files.size(); ++f)
      for (const auto& t : shards_->files[f].tensors()) {
        const auto it = mapped.find(t.name);
        if (it == mapped.end())
          refuse(shards_->files[f].path(),
                 "holds '" + t.name + "', which model.safetensors.index.json does not map");
        if (it->second != f)
          refuse(shards_->files[f].path(),
                 "holds '" + t.name + "', which model.safetensors.index.json maps to '" +
                     shards_->files[it->second].path() + "'; a key is in exactly one file");
        found.emplace(t.name, f);
        keys.emplace_back(t.name, f);
      }
    for (const auto& [key, f] : mapped)
      if (!found.count(key))
        refuse(path, "maps '" + key + "' to '" + shards_->files[f].path() +
                         "', which does not hold it");
  } else {
    for (const char* other : {"pytorch_model.bin", "pytorch_model.bin.index.json"})
      if (present(dir / other))
        refuse(folder, std::string("holds ") + other +
                           " and no model.safetensors. tapegrad reads safetensors only and never "
                           "unpickles (loading a pickle can run any code it holds). Convert it "
                           "where transformers is installed: python3 -c \"from transformers import "
                           "AutoModelForCausalLM as M; M.from_pretrained(DIR).save_pretrained(DIR, "
                           "safe_serialization=True)\"");
    refuse(folder,
           "has no model.safetensors nor model.safetensors.index.json (a Hugging Face Llama "
           "folder holds config.json and its weights in safetensors)",
           "IoError");
  }

  // Every key against the config: none unexpected, none missing, every shape and dtype right.
  const std::vector<Weight> weights = llama_weights(config_);
  std::map<std::string, const Weight*> expected;
  for (const Weight& w : weights) expected.emplace(w.key, &w);
  const std::string config_says = " (config.json: " + sizes_text(config_) + ")";
  for (const auto& [key, f] : keys) {
    const io::SafetensorsReader::Info& t = *shards_->files[f].find(key);
    const std::string& path = shards_->files[f].path();
    if (!is_float(t.dtype))
      refuse(path, "'" + key + "' holds " + std::string(io::dtype_name(t.dtype)) +
                       ", expected floating-point weights (F32, F16, BF16 or F64)");
    if (is_inv_freq_buffer(key, config_.num_hidden_layers())) {  // not read: computed
      const Shape want{std::size_t(config_.head_size() / 2)};
      if (t.shape != want)
        refuse(path, "'" + key + "' is " + str(t.shape) + ", expected the rotary buffer " +
                         str(want) + " (head_dim / 2)" + config_says);
      continue;
    }
    if (key == "lm_head.weight" && config_.tie_word_embeddings()) {  // tied, yet stored
      const Shape want{std::size_t(config_.vocab_size()), std::size_t(config_.hidden_size())};
      if (t.shape != want)
        refuse(path, "'lm_head.weight' is " + str(t.shape) + ", config.json says " +
                         str(want) + config_says);
      shards_->tied_lm_head_in_file = true;
      shards_->lm_head_file = f;
      continue;
    }
    const auto it = expected.find(key);
    if (it == expected.end())
      refuse(path, "unexpected key '" + key + "': a Llama" + config_says + " has no such tensor");
    if (it->second == nullptr) refuse(path, "'" + key + "' is stored twice");
    if (t.shape != it->second->shape)
      refuse(path, "'" + key + "' is " + str(t.shape) + ", config.json says " +
                       str(it->second->shape) + config_says);
    it->second = nullptr;  // seen
  }
  std::size_t missing = 0;
  std::string first;  // the first missing in the model's order
  for (const Weight& w : weights)
    if (expected.at(w.key) != nullptr && missing++ == 0) first = w.key;
  if (missing > 0)
    refuse(shards_->files.size() == 1 ? shards_->files[0].path() : index.string(),
           "missing key '" + first + "'" +
               (missing > 1 ? " and " + std::to_string(missing - 1) + " more" : "") + " (a Llama" +
               config_says + " has " + std::to_string(weights.size()) + " weights)");

  // The model these sizes make must fit in memory (its float32 weights and rotary tables): a
  // sparse file can be as large as any config asks at no cost, and a model allocated past the
  // machine's memory dies instead of refusing.
  double bytes = 2.0 * 4.0 * double(config_.max_position_embeddings()) *
                 double(config_.head_size() / 2);
  for (const Weight& w : weights) {
    double n = 4.0;
    for (const std::size_t d : w.shape) n *= double(d);
    bytes += n;
  }
  const double memory = double(machine_memory_bytes());
  if (memory > 0 && bytes > memory)
    refuse(folder, "the model of config.json's sizes needs " + memory_text(bytes) +
                       " of float32 weights and tables, more than the " + memory_text(memory) +
                       " of memory this machine gives the process");
}

void LlamaWeights::read_into(tt::LlamaForCausalLM& model) const {
  check<ValueError>(same_sizes(model.config(), config_),
                    "LlamaWeights::read_into: expected a LlamaForCausalLM of ", sizes_text(config_),
                    ", got ", sizes_text(model.config()));
  autograd::NoGradGuard no_grad;
  std::map<std::string, Parameter> params;
  for (const auto& [name, p] : model.named_parameters()) params.emplace(name, p);
  for (const io::SafetensorsReader& file : shards_->files)
    for (const io::SafetensorsReader::Info& t : file.tensors()) {  // in each file's order
      const auto it = params.find(t.name);
      if (it == params.end()) continue;  // a buffer, or a tied lm_head.weight (compared below)
      Array& dst = it->second.mutable_data();
      prefault(dst.data(), dst.size());
      file.read_float(t.name, std::span<float>(dst.data(), dst.size()));
      if (all_finite(std::span<const float>(dst.data(), dst.size()))) continue;
      const auto bad = std::find_if(dst.begin(), dst.end(), [](float v) { return !std::isfinite(v); });
      refuse(file.path(), "'" + t.name + "' holds " + std::to_string(*bad) + " at flat position " +
                              std::to_string(bad - dst.begin()) + ": a model's weights are finite");
    }
  if (shards_->tied_lm_head_in_file) {  // tied: it must be the token table, value for value
    const Array& table = model.token_embedding().data();
    const io::SafetensorsReader& file = shards_->files[shards_->lm_head_file];
    file.read_float("lm_head.weight", [&](std::span<const float> piece, std::size_t first) {
      const auto [a, b] = std::mismatch(piece.begin(), piece.end(), table.data() + first);
      if (a == piece.end()) return;
      const std::size_t at = first + std::size_t(a - piece.begin()),
                        C = std::size_t(config_.hidden_size());
      refuse(file.path(), "lm_head.weight differs from model.embed_tokens.weight at (" +
                              std::to_string(at / C) + ", " + std::to_string(at % C) +
                              "): " + std::to_string(*a) + " against " + std::to_string(*b) +
                              ", but config.json says tie_word_embeddings true");
    });
  }
}

// ---- the folder ---------------------------------------------------------------------------------

PretrainedLlama load_llama(const std::string& folder) {
  const fs::path dir(folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    refuse(folder,
           present(dir) ? "expected a folder (config.json, model.safetensors), got a file"
                        : "no such folder",
           "IoError");
  if (!present(dir / "config.json"))
    refuse(folder, "has no config.json, which gives the model's sizes", "IoError");
  PretrainedLlama out;
  out.config = read_llama_config((dir / "config.json").string());
  const LlamaWeights weights(folder, out.config.model);
  {
    nn::SkipInitGuard skip;  // every parameter is read from the files just below
    out.model = std::make_shared<tt::LlamaForCausalLM>(out.config.model);
  }
  weights.read_into(*out.model);
  return out;
}

void save_llama(const tt::LlamaForCausalLM& model, const std::string& folder,
                const LlamaFolderConfig* config) {
  const LlamaFolderConfig c = config ? *config : llama_folder_config(model.config());
  check<ValueError>(same_sizes(model.config(), c.model), "save_llama: expected a config of ",
                    sizes_text(model.config()), " (the model's), got ", sizes_text(c.model));
  const fs::path dir(folder);
  std::error_code made, is_dir;
  fs::create_directories(dir, made);
  if (!fs::is_directory(dir, is_dir))
    throw CheckpointError("save_llama: cannot make the folder '" + folder + "'" +
                              (made ? ": " + made.message() : ": a file of that name is there"),
                          "IoError");
  io::SafetensorsFile f;
  // named_parameters() lists a tied table once, as model.embed_tokens.weight: transformers'
  // save_pretrained leaves the tied lm_head.weight out too.
  for (const auto& [name, p] : model.named_parameters()) f.add(name, Array(p.data()));
  f.set_metadata("format", "pt");  // what transformers' save_pretrained writes
  // The weights last: a save cut short leaves a folder that load_llama refuses (no
  // model.safetensors), never weights beside another model's config.
  io::write_file_atomic((dir / "config.json").string(), c.to_json(), "save_llama");
  io::save_safetensors((dir / "model.safetensors").string(), f);
}

}  // namespace tapegrad::pretrained
