// src/train/gpt_model.cpp: the GPT's bounds and its description in a checkpoint
// (train/gpt_model.hpp).
//
// Read back, every note is parsed strictly ("1abc" is not 1) and checked against the range the
// flags of gpt allow; the tokenizer must read back; the parts must be registered in this program;
// and the notes must fit the tensors beside them (the token table is vocabulary x n_embd, there
// are n_layer blocks, a learned position table is block_size x n_embd) before a model is built
// from them. The library checks the file itself (its checksums; io/checkpoint.hpp).
#include "tapegrad/train/gpt_model.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "flag_errors.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/memory.hpp"
#include "tapegrad/io/checkpoint.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/ops/loss.hpp"
#include "tapegrad/ops/shape.hpp"
#include "tapegrad/nn/lora.hpp"
#include "tapegrad/pretrained/gpt2.hpp"
#include "tapegrad/pretrained/llama.hpp"
#include "tapegrad/pretrained/lora_adapter.hpp"
#include "tapegrad/transformer/gpt_parts.hpp"

namespace tapegrad::train {

namespace tt = nn::transformer;

// ---- bounds --------------------------------------------------------------------------------------

double parameter_count(const tt::GPTConfig& c) {
  const double V = double(c.vocab_size()), T = double(c.block_size()), C = double(c.n_embd()),
               L = double(c.n_layer());
  const double norm = c.norm() == "rmsnorm" ? C : 2 * C;       // weight (and LayerNorm's bias)
  const double attention = (3 * C * C + 3 * C) + (C * C + C);  // c_attn, c_proj
  const double hidden = std::max(1.0, std::floor(2 * (4 * C) / 3));                // SwiGLU's width
  const double mlp = c.mlp() == "swiglu" ? 3 * C * hidden + 2 * hidden + C         // w1, w3, w2
                                         : (4 * C * C + 4 * C) + (4 * C * C + C);  // c_fc, c_proj
  const double positions = c.position() == "learned" ? T * C : 0.0;
  return V * C + positions + L * (2 * norm + attention + mlp) + norm;
}

// Per position about 18 values of width C (1.5 times what a block holds running without the
// tape, ModelSizes::activation_width) and 2 attention rows of length T per head in each block,
// and 3 of width V for the logits and their softmax.
double training_bytes(const tt::GPTConfig& c, std::int64_t batch) {
  const double N = parameter_count(c);
  return training_bytes(sizes_of(c), N, N, batch, c.block_size(), false);
}

double training_bytes(const ModelSizes& s, double parameters, double trained, std::int64_t batch,
                      std::int64_t T_, bool recompute) {
  const double T = double(T_), C = double(s.width), H = double(s.heads), V = double(s.vocab),
               L = double(s.layers);
  const double block = 1.5 * double(s.activation_width) + 2 * H * T;
  const double blocks = recompute ? L * C + block : L * block;
  const double per_position = blocks + 3 * V + 4 * C;
  return 4 * parameters + 12 * trained + 4 * double(batch) * T * per_position;
}

namespace {
std::string figure(double x) {
  std::ostringstream os;
  os.precision(3);
  os << x;
  return os.str();
}
}  // namespace

void check_parameter_count(const tt::GPTConfig& c, const std::string& what) {
  const double n = parameter_count(c);
  if (n > GPTLimits::kMaxParameters)
    throw ValueError(what + " describe a GPT of " + figure(n) + " parameters, more than the " +
                     figure(GPTLimits::kMaxParameters) + " this program builds (n_layer " +
                     std::to_string(c.n_layer()) + ", n_embd " + std::to_string(c.n_embd()) +
                     ", vocabulary " + std::to_string(c.vocab_size()) + ")");
}

void check_training_memory(const tt::GPTConfig& c, std::int64_t batch, std::int64_t grad_accum,
                           std::int64_t eval_windows) {
  // (--grad-accum 1024 --batch-size 4096 once passed this bound and ran out of memory reading the
  // step's 4 GiB of ids, with no flag named; --eval-windows 100000 --block-size 2048 held 3.3 GB
  // of validation windows unbounded.)
  const double T = double(c.block_size());
  const double ids = 16 * double(batch) * double(grad_accum) * T;
  const double val = 16 * double(eval_windows) * T;
  const double bytes = training_bytes(c, batch) + ids + val;
  const double memory = double(machine_memory_bytes());
  const double allowed = GPTLimits::kTrainingShareOfMemory * memory;
  if (bytes <= allowed) return;
  const bool accumulating = grad_accum > 1, validating = val >= 0.1 * bytes;
  throw ValueError(
      std::string("--batch-size") + (accumulating ? ", --grad-accum" : "") +
      (validating ? ", --eval-windows" : "") +
      ", --block-size, --n-layer, --n-embd: a training step would hold about " +
      memory_text(bytes) + " (weights, gradients, AdamW's moments and activations" +
      (accumulating ? ", and " + memory_text(ids) + " of ids for its " +
                          std::to_string(grad_accum) + " micro-batches"
                    : std::string()) +
      (validating ? ", and " + memory_text(val) + " of ids for the " +
                        std::to_string(eval_windows) + " validation windows the run keeps"
                  : std::string()) +
      "), more than the " + memory_text(allowed) + " it may take (" +
      figure(100 * GPTLimits::kTrainingShareOfMemory) + " % of the " + memory_text(memory) +
      " of memory this machine gives the process); lower --batch-size (--grad-accum K keeps "
      "the batch with K times smaller steps), " +
      (accumulating ? "--grad-accum, " : "") + (validating ? "--eval-windows, " : "") +
      "--block-size, --n-layer or --n-embd");
}

void check_training_memory(const ModelSizes& s, double parameters, double trained,
                           std::int64_t batch, std::int64_t T, bool recompute) {
  const double bytes = training_bytes(s, parameters, trained, batch, T, recompute);
  const double memory = double(machine_memory_bytes());
  const double allowed = GPTLimits::kTrainingShareOfMemory * memory;
  if (bytes > allowed)
    throw ValueError(
        "--batch-size, --block-size: a training step would hold about " + memory_text(bytes) +
        " (weights, the gradients and AdamW's moments of the " + figure(trained) +
        " parameters that train, activations), more than the " + memory_text(allowed) +
        " it may take (" + figure(100 * GPTLimits::kTrainingShareOfMemory) + " % of the " +
        memory_text(memory) +
        " of memory this machine gives the process); lower --batch-size "
        "(--grad-accum K keeps the batch with K times smaller steps) or --block-size" +
        (recompute ? std::string() : ", or give --recompute (each block keeps its input only)"));
}

// ---- positions -----------------------------------------------------------------------------------

tt::GPTConfig with_position(tt::GPTConfig c, const std::string& pos) {
  if (pos == "alibi") return c.position("none").attention("alibi");
  return c.position(pos);
}

std::string position_name(const tt::GPTConfig& c) {
  return c.position() == "none" && c.attention() == "alibi" && !c.make_attention() ? "alibi"
                                                                                   : c.position();
}

// ---- the notes -----------------------------------------------------------------------------------

std::map<std::string, std::string> model_notes(const tt::GPTConfig& c,
                                               const data::Tokenizer& tokenizer) {
  for (const auto& [given, part] :
       {std::pair{bool(c.make_attention()), "attention"}, std::pair{bool(c.make_mlp()), "mlp"},
        std::pair{bool(c.make_norm()), "norm"}})
    check<ValueError>(!given, "the GPT's ", part, " was given as a factory (GPTConfig::make_", part,
                      "), which has no name a checkpoint can store; register it by name "
                      "(tapegrad::nn::transformer::register_",
                      part, ") and give the name to GPTConfig::", part, " instead");
  return {{"gpt.tokenizer", tokenizer.name()},
          {"gpt.vocab", tokenizer.to_text()},
          {"gpt.block_size", std::to_string(c.block_size())},
          {"gpt.n_layer", std::to_string(c.n_layer())},
          {"gpt.n_head", std::to_string(c.n_head())},
          {"gpt.n_embd", std::to_string(c.n_embd())},
          {"gpt.dropout", py_float(c.dropout())},
          {"gpt.position", position_name(c)},
          {"gpt.attention", c.attention()},
          {"gpt.norm", c.norm()},
          {"gpt.mlp", c.mlp()},
          {"gpt.gelu", c.gelu()},
          {"gpt.norm_eps", py_float(c.norm_eps())}};
}

namespace {

std::string note(const io::SafetensorsFile& f, const std::string& key, const std::string& path) {
  const auto v = f.metadata_value("progress.extra." + key);
  if (!v)
    throw CheckpointError(
        "'" + path + "' holds no note '" + key + "': not a checkpoint of a GPT run",
        "InvalidCheckpoint");
  return *v;
}

/// A note that does not hold what it should: CheckpointError naming the file, the note and the text.
[[noreturn]] void bad_note(const std::string& path, const std::string& key,
                           const std::string& expected, const std::string& text) {
  throw CheckpointError("'" + path + "': the note '" + key + "': expected " + expected + ", got '" +
                            text.substr(0, 40) + "'",
                        "InvalidCheckpoint");
}

std::int64_t integer_note(const io::SafetensorsFile& f, const std::string& key,
                          const std::string& path, std::int64_t low, std::int64_t high) {
  const std::string text = note(f, key, path);
  std::int64_t v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || v < low ||
      v > high)
    bad_note(path, key, "an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]",
             text);
  return v;
}

double number_note(const io::SafetensorsFile& f, const std::string& key, const std::string& path,
                   const std::string& text, bool (*ok)(double), const std::string& expected) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
      end != text.c_str() + text.size() || errno == ERANGE || !ok(v))
    bad_note(path, key, expected, text);
  (void)f;
  return v;
}

std::string choice_note(const io::SafetensorsFile& f, const std::string& key,
                        const std::string& path, const std::vector<std::string>& choices) {
  const std::string text = note_or_default(f, key, path);
  std::string list;
  for (const std::string& c : choices) {
    if (text == c) return text;
    list += (list.empty() ? "" : ", ") + c;
  }
  bad_note(path, key, "one of " + list, text);
}

/// A part's name, which this program must have registered: a checkpoint of a learner's model is
/// read by a program that registered the learner's parts (ValueError naming the part otherwise).
std::string part_note(const io::SafetensorsFile& f, const std::string& key, const std::string& path,
                      void (*lookup)(const std::string& name, const std::string& where)) {
  const std::string name = note_or_default(f, key, path);
  lookup(name, "'" + path + "': its model's " + key.substr(4));
  return name;
}

/// The config's notes against the tensors they describe, before anything is allocated.
void check_notes_fit_tensors(const tt::GPTConfig& c, const io::SafetensorsFile& f,
                             const std::string& path) {
  auto shape_of = [&](const std::string& name) -> std::string {
    return f.contains(name) ? str(f.record(name).shape) : "none";
  };
  auto expect = [&](const std::string& name, const std::string& shape, const std::string& notes) {
    if (shape_of(name) != shape)
      throw CheckpointError("'" + path + "': the notes " + notes + " say '" + name + "' is " +
                                shape + ", the file holds " + shape_of(name),
                            "InvalidCheckpoint");
  };
  const std::string C = std::to_string(c.n_embd());
  expect("model.lm_head.weight", "(" + std::to_string(c.vocab_size()) + ", " + C + ")",
         "gpt.vocab and gpt.n_embd");
  // Blocks 0 .. n_layer - 1 hold tensors, block n_layer none (whatever the parts' own names).
  const auto holds_block = [&](std::int64_t i) {
    const std::string prefix = "model.transformer.h." + std::to_string(i) + ".";
    for (const io::TensorRecord& r : f.tensors())
      if (r.name.starts_with(prefix)) return true;
    return false;
  };
  if (!holds_block(c.n_layer() - 1) || holds_block(c.n_layer()))
    throw CheckpointError("'" + path + "': the notes gpt.n_layer say " +
                              std::to_string(c.n_layer()) + " blocks, the file holds " +
                              (holds_block(c.n_layer()) ? "more" : "fewer"),
                          "InvalidCheckpoint");
  if (c.position() == "learned")
    expect("model.transformer.wpe.weight", "(" + std::to_string(c.block_size()) + ", " + C + ")",
           "gpt.block_size and gpt.n_embd");
}

}  // namespace

std::string note_or_default(const io::SafetensorsFile& f, const std::string& key,
                            const std::string& path) {
  const auto v = f.metadata_value("progress.extra." + key);
  if (v) return *v;
  if (key == "gpt.norm") return "layernorm";
  if (key == "gpt.mlp") return "gelu";
  if (key == "gpt.attention") return "causal";
  if (key == "gpt.tokenizer") return "char";
  if (key == "gpt.norm_eps") return py_float(1e-5);
  if (key == "gpt.train_block_size") return note(f, "gpt.block_size", path);  // (were equal)
  if (key == "gpt.data_format") return "fortunes";  // --data was read as fortunes only
  if (key == "gpt.lora_r") return "0";              // (no adapters before they existed)
  return note(f, key, path);
}

std::pair<tt::GPTConfig, data::Tokenizer> read_model_notes(const io::SafetensorsFile& f,
                                                           const std::string& path) {
  const std::string name = choice_note(f, "gpt.tokenizer", path, {"char", "bpe", "gpt2", "hf"});
  std::optional<data::Tokenizer> tokenizer;
  try {
    tokenizer =
        data::Tokenizer::from_text(name, note(f, "gpt.vocab", path), "the note 'gpt.vocab'");
  } catch (const ValueError& e) {
    throw CheckpointError("'" + path + "': the note 'gpt.vocab': " + e.what(), "InvalidCheckpoint");
  }
  tt::GPTConfig c(tokenizer->vocab_size(),
                  integer_note(f, "gpt.block_size", path, 1, GPTLimits::kMaxBlockSize));
  c = with_position(
      c, choice_note(f, "gpt.position", path, {"learned", "sinusoidal", "rope", "none", "alibi"}));
  if (f.metadata_value("progress.extra.gpt.attention"))  // (older files: "alibi" said it all)
    c.attention(part_note(f, "gpt.attention", path, [](const std::string& n, const std::string& w) {
      tt::registered_attention(n, w);
    }));
  c.n_layer(integer_note(f, "gpt.n_layer", path, 1, GPTLimits::kMaxLayers))
      .n_head(integer_note(f, "gpt.n_head", path, 1, GPTLimits::kMaxHeads))
      .n_embd(integer_note(f, "gpt.n_embd", path, 1, GPTLimits::kMaxWidth))
      .norm(
          part_note(f, "gpt.norm", path,
                    [](const std::string& n, const std::string& w) { tt::registered_norm(n, w); }))
      .mlp(part_note(f, "gpt.mlp", path,
                     [](const std::string& n, const std::string& w) { tt::registered_mlp(n, w); }))
      .gelu(choice_note(f, "gpt.gelu", path, {"none", "tanh"}));
  c.dropout(number_note(
      f, "gpt.dropout", path, note(f, "gpt.dropout", path),
      [](double p) { return p >= 0 && p <= 1; }, "a number in [0, 1]"));
  c.norm_eps(number_note(
      f, "gpt.norm_eps", path, note_or_default(f, "gpt.norm_eps", path),
      [](double e) { return e > 0 && e < 1; }, "a number in (0, 1)"));
  try {
    tt::validate(c);  // n_embd a multiple of n_head, an even head size with rope, ...
  } catch (const ValueError& e) {
    throw CheckpointError("'" + path + "': its notes: " + e.what(), "InvalidCheckpoint");
  }
  check_parameter_count(c, "'" + path + "': its notes");
  check_notes_fit_tensors(c, f, path);
  return {c, std::move(*tokenizer)};
}

// ---- loading and scoring -------------------------------------------------------------------------

void check_finite(const nn::Module& model, const std::string& source) {
  for (const auto& [name, p] : model.named_parameters()) {
    const Array& w = p.data();
    const auto bad = std::find_if(w.begin(), w.end(), [](float v) { return !std::isfinite(v); });
    if (bad != w.end())
      throw DataError(source + ": the parameter '" + name + "' holds " + std::to_string(*bad) +
                      " at flat position " + std::to_string(bad - w.begin()) +
                      ": the run that saved it diverged, or the file was edited");
  }
}

ModelSizes sizes_of(const tt::GPTConfig& c) {
  return {.vocab = c.vocab_size(),
          .context = c.block_size(),
          .layers = c.n_layer(),
          .heads = c.n_head(),
          .width = c.n_embd(),
          .activation_width = 12 * c.n_embd(),
          .cache_width = c.n_embd(),
          .cache_whole_context = true};
}

// A Llama's block holds per position: the residual and its norm (2 C), q and the attention's
// output (H d each), k and v (K d each), o_proj's output (C), and the MLP's gate, up and their
// product (3 F).
ModelSizes sizes_of(const tt::LlamaConfig& c) {
  const std::int64_t C = c.hidden_size(), d = c.head_size(), H = c.num_attention_heads(),
                     K = c.kv_heads(), F = c.intermediate_size();
  return {.vocab = c.vocab_size(),
          .context = c.max_position_embeddings(),
          .layers = c.num_hidden_layers(),
          .heads = H,
          .width = C,
          .activation_width = 3 * C + 2 * H * d + 2 * K * d + 3 * F,
          .cache_width = K * d,
          .cache_whole_context = false};
}

tt::GPT* LoadedModel::gpt() const { return dynamic_cast<tt::GPT*>(model.get()); }

std::string LoadedModel::parameters_text() const {
  return gpt() ? "parameters (position table included)" : "parameters";
}

namespace {

// --adapter: PEFT's adapter folder attached to the model (its checks are the library's, each
// naming the file); described for the programs' first line.
std::string attach_adapter(nn::Module& model, const std::string& adapter) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(adapter, ec))
    throw DataError("--adapter: '" + adapter +
                    "': expected a folder holding adapter_config.json and "
                    "adapter_model.safetensors (PEFT's layout), got " +
                    (fs::exists(adapter, ec) ? "a file" : "nothing there"));
  const pretrained::LoRAAdapterConfig c = pretrained::load_lora_adapter(model, adapter);
  std::ostringstream os;
  os << " with the LoRA adapter " << adapter << " (r " << c.r << ", lora_alpha " << c.lora_alpha
     << ", " << nn::lora_layers(model).size() << " layers)";
  return os.str();
}

// A Llama folder: its model and its tokenizer.json.
LoadedModel load_llama_folder(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path tokenizer_file = fs::path(path) / "tokenizer.json";
  std::error_code ec;
  if (!fs::is_regular_file(tokenizer_file, ec))
    throw DataError("--model: " + path +
                    " has no tokenizer.json: the model's tokenizer is needed to read and write "
                    "text (copy the model's tokenizer.json into the folder)");
  data::Tokenizer tokenizer(data::HFTokenizer::load(tokenizer_file.string()));
  pretrained::PretrainedLlama llama = pretrained::load_llama(path);
  const std::int64_t V = llama.model->vocab_size();
  if (tokenizer.vocab_size() > V)
    throw DataError("--model: " + tokenizer_file.string() + ": expected at most the model's " +
                    std::to_string(V) + " tokens (config.json's vocab_size), got " +
                    std::to_string(tokenizer.vocab_size()));
  return {.model = llama.model,
          .tokenizer = std::move(tokenizer),
          .kind = "Hugging Face Llama folder",
          .sizes = sizes_of(llama.model->config()),
          .parameters = 0,
          .adapter = {}};
}


// load_model's work up to its adapter; load_model puts --model in front of what it throws.
LoadedModel load_model_named(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))  // (ec: a reason other than absence, a loop of links say)
    throw DataError("--model: '" + path +
                    "': " + (ec ? ec.message() : std::string("no such file or folder")) +
                    " (expected a Hugging Face GPT-2 or Llama folder or a checkpoint written by "
                    "gpt)");
  std::optional<LoadedModel> m;
  if (fs::is_directory(path, ec)) {
    const std::string type =
        fs::exists(fs::path(path) / "config.json", ec) ? pretrained::read_model_type(path) : "";
    if (type == "llama") {
      m = load_llama_folder(path);
    } else {
      if (type != "" && type != "gpt2")
        throw DataError("--model: " + (fs::path(path) / "config.json").string() +
                        ": expected model_type \"gpt2\" or \"llama\", got \"" + type + "\"");
      pretrained::PretrainedGPT2 gpt2 = pretrained::load_gpt2(path);
      if (!gpt2.tokenizer)
        throw DataError(path +
                        " has no vocab.json and merges.txt: the model's tokenizer is needed "
                        "to read and write text (copy GPT-2's two files into the folder)");
      m = LoadedModel{.model = gpt2.model,
                      .tokenizer = data::Tokenizer(std::move(*gpt2.tokenizer)),
                      .kind = "Hugging Face GPT-2 folder",
                      .sizes = sizes_of(gpt2.model->config()),
                      .parameters = 0,
                      .adapter = {}};
    }
  } else {
    const io::SafetensorsFile f = io::load_safetensors(path);
    if (f.metadata_value("progress.extra.gpt.model"))
      throw DataError("--model: '" + path +
                      "' is a checkpoint of a run that fine-tuned a Llama folder: give --model "
                      "the folder its --export-hf wrote (or the --init-from folder, and --adapter "
                      "the folder of --export-adapter)");
    auto [config, tokenizer] = read_model_notes(f, path);
    std::shared_ptr<tt::GPT> model;
    {
      nn::SkipInitGuard skip;  // io::load below writes every parameter (strict)
      model = std::make_shared<tt::GPT>(config, std::make_shared<Generator>(0));
      if (note_or_default(f, "gpt.lora_r", path) != "0") {  // a run with --lora-r: its adapters
        const std::int64_t r = integer_note(f, "gpt.lora_r", path, 1, 4096);
        std::vector<std::string> targets;
        std::stringstream list(note(f, "gpt.lora_targets", path));
        for (std::string t; std::getline(list, t, ',');) targets.push_back(t);
        const auto options =
            nn::LoRAOptions(r)
                .lora_alpha(number_note(
                    f, "gpt.lora_alpha", path, note(f, "gpt.lora_alpha", path),
                    [](double a) { return a > 0 && a <= 1e6; }, "a number in (0, 1e6]"))
                .lora_dropout(number_note(
                    f, "gpt.lora_dropout", path, note(f, "gpt.lora_dropout", path),
                    [](double p) { return p >= 0 && p < 1; }, "a number in [0, 1)"));
        try {
          nn::add_lora(*model, targets, options);
        } catch (const ValueError& e) {
          throw CheckpointError("'" + path + "': the note gpt.lora_targets: " + e.what(),
                                "InvalidCheckpoint");
        }
      }
    }
    io::load(*model, f, path);  // the "model." part of the training checkpoint, strict
    m = LoadedModel{.model = model,
                    .tokenizer = std::move(tokenizer),
                    .kind = "gpt checkpoint",
                    .sizes = sizes_of(config),
                    .parameters = 0,
                    .adapter = {}};
  }
  return std::move(*m);
}

}  // namespace

LoadedModel load_model(const std::string& path, const std::string& adapter) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel m = detail::naming_flag("--model", [&] { return load_model_named(path); });
  if (!adapter.empty())
    m.adapter = detail::naming_flag("--adapter", [&] { return attach_adapter(*m.model, adapter); });
  check_finite(*m.model, path);
  m.model->eval();  // (the adapters' dropout too)
  if (const tt::GPT* gpt = m.gpt())
    m.parameters = gpt->num_params(false);
  else
    for (const Parameter& p : m.model->parameters()) m.parameters += std::int64_t(p.numel());
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

std::int64_t logit_rows(std::int64_t vocab) {
  return std::max<std::int64_t>(16, (std::int64_t(1) << 22) / std::max<std::int64_t>(vocab, 1));
}

namespace {

// The loss summed over the targets, the features computed once and the head run on at most
// logit_rows(V) rows at a time.
template <class Features, class Head>
double chunked_summed_loss(std::int64_t V, const IndexArray& x, const IndexArray& y,
                           std::int64_t ignore, Features features_of, Head head) {
  const auto options = ops::CrossEntropyOptions().ignore_index(ignore).reduction("sum");
  IndexArray targets_all = y;
  targets_all.reshape({y.size()});
  const std::size_t rows = targets_all.size(), chunk = std::size_t(logit_rows(V));
  const Tensor features = features_of(x);  // (B, T, C), after the last norm
  if (rows <= chunk)                       // one pass: all the logits at once
    return ops::cross_entropy(ops::reshape(head(features), {-1, V}), targets_all, options).item();
  const std::size_t C = features.shape()[2];
  double total = 0.0;
  for (std::size_t r = 0; r < rows; r += chunk) {
    const std::size_t n = std::min(chunk, rows - r);
    Array part = Array::from_shape({1, n, C});
    std::copy_n(features.data().data() + r * C, n * C, part.data());
    IndexArray targets = IndexArray::from_shape({n});
    std::copy_n(targets_all.data() + r, n, targets.data());
    const Tensor logits = ops::reshape(head(Tensor(std::move(part))), {-1, V});
    total += ops::cross_entropy(logits, targets, options).item();
  }
  return total;
}

}  // namespace

double summed_loss(tt::GPT& model, const IndexArray& x, const IndexArray& y, std::int64_t ignore) {
  const std::int64_t V = model.config().vocab_size();
  if (std::size_t(y.size()) <= std::size_t(logit_rows(V))) {  // one pass: all the logits at once
    const auto options = ops::CrossEntropyOptions().ignore_index(ignore).reduction("sum");
    IndexArray targets = y;
    targets.reshape({y.size()});
    return ops::cross_entropy(ops::reshape(model.forward(x), {-1, V}), targets, options).item();
  }
  return chunked_summed_loss(
      V, x, y, ignore, [&](const IndexArray& ids) { return model.features(ids); },
      [&](const Tensor& f) { return model.lm_head->forward(f); });
}

double summed_loss(tt::CausalLM& model, const IndexArray& x, const IndexArray& y,
                   std::int64_t ignore) {
  if (auto* gpt = dynamic_cast<tt::GPT*>(&model)) return summed_loss(*gpt, x, y, ignore);
  const std::int64_t V = model.vocab_size();
  if (auto* llama = dynamic_cast<tt::LlamaForCausalLM*>(&model))
    return chunked_summed_loss(
        V, x, y, ignore, [&](const IndexArray& ids) { return llama->features(ids); },
        [&](const Tensor& f) { return llama->head(f); });
  const auto options = ops::CrossEntropyOptions().ignore_index(ignore).reduction("sum");
  IndexArray targets = y;
  targets.reshape({y.size()});
  return ops::cross_entropy(ops::reshape(model.forward(x), {-1, V}), targets, options).item();
}

double flops_per_token(const tt::CausalLM& model) {
  if (const auto* gpt = dynamic_cast<const tt::GPT*>(&model)) return gpt->flops_per_token();
  double N = 0;
  for (const Parameter& p : model.parameters()) N += double(p.numel());
  if (const auto* llama = dynamic_cast<const tt::LlamaForCausalLM*>(&model)) {
    const tt::LlamaConfig& c = llama->config();
    return 6.0 * N + 12.0 * double(c.num_hidden_layers()) * double(c.num_attention_heads()) *
                         double(c.head_size()) * double(c.max_position_embeddings());
  }
  return 6.0 * N;
}

}  // namespace tapegrad::train
