// src/pretrained/gpt2.cpp: GPT-2's Hugging Face folder <-> tapegrad's GPT (gpt2.hpp).
//
// One table drives both directions: gpt2_weights() lists every tensor of GPT-2's file for a
// config, with its shape and whether it is a Conv1D matrix. A file key is the tapegrad parameter's
// name without "transformer." (wte.weight <-> transformer.wte.weight), optionally prefixed in the
// file; a Conv1D matrix (in, out) is the transpose of the Linear weight (out, in).
#include "tapegrad/pretrained/gpt2.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <unistd.h>

#include "tapegrad/autograd/grad_mode.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "weight_checks.hpp"

namespace tapegrad::pretrained {

namespace fs = std::filesystem;
namespace tt = nn::transformer;
using detail::all_finite;
using detail::is_float;
using detail::prefault;

namespace {

// One tensor of GPT-2's file.
struct Weight {
  std::string key;  // without "transformer.": tapegrad's name is "transformer." + key
  Shape shape;      // as the file holds it
  bool conv1d;      // a Conv1D matrix (in, out): transposed to and from a Linear's (out, in)
};

std::vector<Weight> gpt2_weights(const GPT2Config& c) {
  const auto V = std::size_t(c.vocab_size), P = std::size_t(c.n_positions),
             C = std::size_t(c.n_embd);
  std::vector<Weight> w = {{"wte.weight", {V, C}, false}, {"wpe.weight", {P, C}, false}};
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    for (const char* norm : {"ln_1", "ln_2"}) {
      w.push_back({h + norm + ".weight", {C}, false});
      w.push_back({h + norm + ".bias", {C}, false});
    }
    w.push_back({h + "attn.c_attn.weight", {C, 3 * C}, true});
    w.push_back({h + "attn.c_attn.bias", {3 * C}, false});
    w.push_back({h + "attn.c_proj.weight", {C, C}, true});
    w.push_back({h + "attn.c_proj.bias", {C}, false});
    w.push_back({h + "mlp.c_fc.weight", {C, 4 * C}, true});
    w.push_back({h + "mlp.c_fc.bias", {4 * C}, false});
    w.push_back({h + "mlp.c_proj.weight", {4 * C, C}, true});
    w.push_back({h + "mlp.c_proj.bias", {C}, false});
  }
  w.push_back({"ln_f.weight", {C}, false});
  w.push_back({"ln_f.bias", {C}, false});
  return w;
}



// h.<i>.attn.bias and h.<i>.attn.masked_bias, i < n_layer: the causal mask buffers of older files.
bool is_mask_buffer(const std::string& key, std::int64_t n_layer) {
  if (key.rfind("h.", 0) != 0) return false;
  const std::size_t dot = key.find('.', 2);
  if (dot == std::string::npos || dot == 2 || dot > 12) return false;
  const std::string index = key.substr(2, dot - 2), rest = key.substr(dot);
  if (!std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
      (index.size() > 1 && index[0] == '0') || std::stoll(index) >= n_layer)
    return false;
  return rest == ".attn.bias" || rest == ".attn.masked_bias";
}

[[noreturn]] void refuse(const std::string& where, const std::string& why,
                         const char* kind = "InvalidCheckpoint") {
  throw CheckpointError("load_gpt2: '" + where + "': " + why, kind);
}

// dst (cols, rows) = src (rows, cols) transposed, by tiles that stay in cache.
void transpose(const float* src, std::size_t rows, std::size_t cols, float* dst) {
  constexpr std::size_t kTile = 16;
  for (std::size_t r0 = 0; r0 < rows; r0 += kTile) {
    const std::size_t r1 = std::min(rows, r0 + kTile);
    for (std::size_t c0 = 0; c0 < cols; c0 += kTile) {
      const std::size_t c1 = std::min(cols, c0 + kTile);
      for (std::size_t c = c0; c < c1; ++c)
        for (std::size_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
    }
  }
}



// The sizes and choices of `model` against GPT-2's of `c`.
void check_model_fits(const tt::GPTConfig& m, const GPT2Config& c, const char* who) {
  const tt::GPTConfig want = c.gpt_config(m.dropout());
  const bool same = m.vocab_size() == want.vocab_size() && m.block_size() == want.block_size() &&
                    m.n_embd() == want.n_embd() && m.n_layer() == want.n_layer() &&
                    m.n_head() == want.n_head() && m.position() == want.position() &&
                    m.norm() == want.norm() && m.mlp() == want.mlp() && m.gelu() == want.gelu() &&
                    m.norm_eps() == want.norm_eps();
  check<ValueError>(same, who, ": expected a GPT of GPT-2's choices with vocab_size ", c.vocab_size,
                    ", block_size (n_positions) ", c.n_positions, ", n_embd ", c.n_embd,
                    ", n_layer ", c.n_layer, ", n_head ", c.n_head, ", got vocab_size ",
                    m.vocab_size(), ", block_size ", m.block_size(), ", n_embd ", m.n_embd(),
                    ", n_layer ", m.n_layer(), ", n_head ", m.n_head(), ", position ", m.position(),
                    ", norm ", m.norm(), ", mlp ", m.mlp(), ", gelu ", m.gelu());
}

std::map<std::string, Parameter> parameters_by_name(const tt::GPT& model) {
  std::map<std::string, Parameter> out;
  for (const auto& [name, p] : model.named_parameters()) out.emplace(name, p);
  return out;
}

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}
}  // namespace

// ---- the folder ----------------------------------------------------------------------------------

std::string gpt2_weights_path(const std::string& folder) {
  const fs::path dir(folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    refuse(folder,
           present(dir) ? "expected a folder (config.json, model.safetensors, vocab.json, "
                          "merges.txt), got a file"
                        : "no such folder",
           "IoError");
  if (present(dir / "model.safetensors")) return (dir / "model.safetensors").string();
  if (present(dir / "model.safetensors.index.json"))
    refuse(folder,
           "holds a sharded model (model.safetensors.index.json); tapegrad reads one "
           "model.safetensors, which every GPT-2 up to XL fits in");
  // The folder as a Python string literal, for the command the message suggests.
  std::string literal = "'";
  for (const char ch : folder)
    literal += (ch == '\'' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
  literal += "'";
  for (const auto& [other, from] :
       {std::pair{"pytorch_model.bin", ""}, std::pair{"tf_model.h5", ", from_tf=True"},
        std::pair{"flax_model.msgpack", ", from_flax=True"}})
    if (present(dir / other))
      refuse(folder,
             std::string("holds ") + other + " and no model.safetensors. tapegrad reads " +
                 "safetensors only" +
                 (std::string(other) == "pytorch_model.bin"
                      ? " and never unpickles (loading a pickle can run any code it holds)"
                      : "") +
                 ". Convert it where transformers is installed: python3 -c \"from transformers "
                 "import GPT2LMHeadModel as M; M.from_pretrained(" +
                 literal + from + ").save_pretrained(" + literal + ", safe_serialization=True)\"");
  refuse(folder,
         "has no model.safetensors (a Hugging Face GPT-2 folder holds config.json, "
         "model.safetensors, vocab.json and merges.txt)",
         "IoError");
}

// ---- reading -------------------------------------------------------------------------------------

GPT2Weights::GPT2Weights(const std::string& path, const GPT2Config& config)
    : file_(path), config_(config) {
  const auto& tensors = file_.tensors();
  // The prefix is the token table's: every other key must carry the same one.
  prefix_ = file_.find("transformer.wte.weight") != nullptr ? "transformer." : "";
  std::map<std::string, const Weight*> expected;
  const std::vector<Weight> weights = gpt2_weights(config);
  for (const Weight& w : weights) expected.emplace(w.key, &w);

  for (const io::SafetensorsReader::Info& t : tensors) {
    if (t.name == "lm_head.weight") {
      const Shape want{std::size_t(config.vocab_size), std::size_t(config.n_embd)};
      if (t.shape != want)
        refuse(path, "lm_head.weight is " + str(t.shape) + ", expected " + str(want) +
                         " (vocab_size, n_embd) from config.json");
      if (!is_float(t.dtype))
        refuse(path, "lm_head.weight holds " + std::string(io::dtype_name(t.dtype)) +
                         ", expected floating-point weights (F32, F16, BF16 or F64)");
      has_lm_head_ = true;
      continue;
    }
    if (t.name.rfind(prefix_, 0) != 0)
      refuse(path, "unexpected key '" + t.name + "' in a file whose other keys start with '" +
                       prefix_ + "'");
    const std::string key = t.name.substr(prefix_.size());
    if (is_mask_buffer(key, config.n_layer)) {  // a buffer, not read: the attention masks itself
      const auto P = std::size_t(config.n_positions);
      const Shape want = key.ends_with(".masked_bias") ? Shape{} : Shape{1, 1, P, P};
      if (t.shape != want && !(want.empty() && t.shape == Shape{1}))
        refuse(path, "'" + t.name + "' is " + str(t.shape) + ", expected the mask buffer " +
                         str(want) + " (n_positions " + std::to_string(config.n_positions) +
                         " from config.json)");
      continue;
    }
    const auto it = expected.find(key);
    if (it == expected.end())
      refuse(path, "unexpected key '" + t.name + "': GPT-2 with n_layer " +
                       std::to_string(config.n_layer) + " (config.json) has no such tensor");
    if (t.shape != it->second->shape)
      refuse(path, "'" + t.name + "' is " + str(t.shape) + ", config.json says " +
                       str(it->second->shape) + " (n_embd " + std::to_string(config.n_embd) +
                       ", n_positions " + std::to_string(config.n_positions) + ", vocab_size " +
                       std::to_string(config.vocab_size) + ")");
    if (!is_float(t.dtype))
      refuse(path, "'" + t.name + "' holds " + std::string(io::dtype_name(t.dtype)) +
                       ", expected floating-point weights (F32, F16, BF16 or F64)");
    it->second = nullptr;  // seen
  }
  std::size_t missing = 0;
  std::string first;  // the first missing in the model's order: where a cut list stops
  for (const Weight& w : weights)
    if (expected.at(w.key) != nullptr && missing++ == 0) first = w.key;
  if (missing > 0) {
    refuse(path, "missing key '" + prefix_ + first + "'" +
                     (missing > 1 ? " and " + std::to_string(missing - 1) + " more" : "") +
                     " (GPT-2 with n_layer " + std::to_string(config.n_layer) +
                     " from config.json has " + std::to_string(weights.size()) + " weights)");
  }
  // The model these sizes make must fit in memory: a sparse file can be as large as any config
  // asks at no cost, and a model allocated past the machine's memory dies instead of refusing.
  double bytes = 0.0;
  for (const Weight& w : weights) {
    double n = 4.0;
    for (const std::size_t d : w.shape) n *= double(d);
    bytes += n;
  }
  const double memory = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (memory > 0 && bytes > memory)
    refuse(path, "the model of config.json's sizes needs " +
                     std::to_string(std::int64_t(bytes / 1e6)) +
                     " MB of float32 weights, more than this machine's " +
                     std::to_string(std::int64_t(memory / 1e6)) + " MB of memory");
}

void GPT2Weights::read_into(tt::GPT& model) const {
  check_model_fits(model.config(), config_, "GPT2Weights::read_into");
  autograd::NoGradGuard no_grad;
  const std::map<std::string, Parameter> params = parameters_by_name(model);
  std::map<std::string, const Weight*> by_key;
  const std::vector<Weight> weights = gpt2_weights(config_);
  for (const Weight& w : weights) by_key.emplace(w.key, &w);
  const std::string& path = file_.path();
  const auto check_finite = [&](const std::string& name, std::span<const float> values) {
    if (all_finite(values)) return;
    const auto bad =
        std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    refuse(path, "'" + name + "' holds " + std::to_string(*bad) + " at flat position " +
                     std::to_string(bad - values.begin()) + ": a model's weights are finite");
  };
  std::vector<float> staging;  // one Conv1D matrix as the file holds it
  for (const io::SafetensorsReader::Info& t : file_.tensors()) {  // in the file's order
    if (t.name == "lm_head.weight") continue;
    const auto it = by_key.find(t.name.substr(prefix_.size()));
    if (it == by_key.end()) continue;  // a mask buffer
    const Weight& w = *it->second;
    Array& dst = params.at("transformer." + w.key).mutable_data();
    prefault(dst.data(), dst.size());
    if (!w.conv1d) {  // straight into the parameter
      file_.read_float(t.name, std::span<float>(dst.data(), dst.size()));
      check_finite(t.name, std::span<const float>(dst.data(), dst.size()));
      continue;
    }
    staging.resize(t.numel());
    file_.read_float(t.name, std::span<float>(staging));
    check_finite(t.name, staging);
    transpose(staging.data(), w.shape[0], w.shape[1], dst.data());  // (in, out) -> (out, in)
  }
  if (has_lm_head_) {  // tied: it must be the token table, value for value
    const Array& table = model.token_embedding().data();
    file_.read_float("lm_head.weight", [&](std::span<const float> piece, std::size_t first) {
      const auto [a, b] = std::mismatch(piece.begin(), piece.end(), table.data() + first);
      if (a != piece.end()) {
        const std::size_t at = first + std::size_t(a - piece.begin()),
                          C = std::size_t(config_.n_embd);
        refuse(path, "lm_head.weight differs from " + prefix_ + "wte.weight at (" +
                         std::to_string(at / C) + ", " + std::to_string(at % C) +
                         "): " + std::to_string(*a) + " against " + std::to_string(*b) +
                         "; GPT-2's head is tied to the token table, and tapegrad's GPT "
                         "cannot hold an untied one");
      }
    });
  }
}

PretrainedGPT2 load_gpt2(const std::string& folder, double dropout) {
  const std::string weights_path = gpt2_weights_path(folder);
  const fs::path dir(folder);
  if (!present(dir / "config.json"))
    refuse(folder, "has model.safetensors but no config.json, which gives the model's sizes",
           "IoError");
  PretrainedGPT2 out;
  out.config = read_gpt2_config((dir / "config.json").string());
  const GPT2Weights weights(weights_path, out.config);
  const bool has_vocab = present(dir / "vocab.json") || present(dir / "encoder.json"),
             has_merges = present(dir / "merges.txt") || present(dir / "vocab.bpe");
  if (has_vocab != has_merges)
    refuse(folder,
           std::string("holds ") +
               (has_vocab ? "a vocabulary but no merges.txt" : "merges.txt but no vocab.json") +
               ": GPT-2's tokenizer is the two files together");
  if (has_vocab) {
    out.tokenizer = data::GPT2Tokenizer::load(folder);
    if (std::int64_t(out.tokenizer->vocab_size()) != out.config.vocab_size)
      refuse(folder, "the tokenizer (vocab.json, merges.txt) has " +
                         std::to_string(out.tokenizer->vocab_size()) +
                         " tokens, but config.json's vocab_size is " +
                         std::to_string(out.config.vocab_size) +
                         ": the model's token table must have one row per token");
  }
  {
    nn::SkipInitGuard skip;  // every parameter is read from the file just below
    out.model = std::make_shared<tt::GPT>(out.config.gpt_config(dropout));
  }
  weights.read_into(*out.model);
  return out;
}

// ---- writing -------------------------------------------------------------------------------------

void save_gpt2(const tt::GPT& model, const std::string& folder,
               const data::GPT2Tokenizer* tokenizer, const GPT2Config* config) {
  const GPT2Config c = config ? *config : gpt2_config_of(model.config());
  check_model_fits(model.config(), c, "save_gpt2");
  if (tokenizer)
    check<ValueError>(std::int64_t(tokenizer->vocab_size()) == c.vocab_size,
                      "save_gpt2: expected a tokenizer of vocab_size ", c.vocab_size,
                      " tokens, got ", tokenizer->vocab_size());
  const fs::path dir(folder);
  std::error_code made, is_dir;
  fs::create_directories(dir, made);
  if (!fs::is_directory(dir, is_dir))
    throw CheckpointError("save_gpt2: cannot make the folder '" + folder + "'" +
                              (made ? ": " + made.message() : ": a file of that name is there"),
                          "IoError");
  const std::map<std::string, Parameter> params = parameters_by_name(model);
  io::SafetensorsFile f;
  for (const Weight& w : gpt2_weights(c)) {
    const Array& src = params.at("transformer." + w.key).data();
    if (!w.conv1d) {
      f.add("transformer." + w.key, Array(src));
      continue;
    }
    Array file_layout = Array::from_shape(w.shape);  // (in, out) from the Linear's (out, in)
    transpose(src.data(), w.shape[1], w.shape[0], file_layout.data());
    f.add("transformer." + w.key, std::move(file_layout));
  }
  f.set_metadata("format", "pt");  // what transformers' save_pretrained writes
  // The weights last: a save cut short leaves a folder that load_gpt2 refuses (no
  // model.safetensors), never weights beside another model's config.
  io::write_file_atomic((dir / "config.json").string(), c.to_json(), "save_gpt2");
  if (tokenizer) {
    io::write_file_atomic((dir / "vocab.json").string(), tokenizer->vocab_json(), "save_gpt2");
    io::write_file_atomic((dir / "merges.txt").string(), tokenizer->merges_txt(), "save_gpt2");
  }
  io::save_safetensors((dir / "model.safetensors").string(), f);
}

}  // namespace tapegrad::pretrained
