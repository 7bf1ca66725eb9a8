// src/train/gpt_run.cpp: a GPT trained on text, from start to end (train/gpt_run.hpp). run_gpt()
// reads as train.py does, one named step after another: the options, the folders, the data, the
// model and its optimizer, the training, what the run shows.
#include "tapegrad/train/gpt_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "flag_errors.hpp"
#include "gpt_pictures.hpp"
#include "tapegrad/autograd/grad_mode.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/threads.hpp"
#include "tapegrad/io/file_identity.hpp"
#include "tapegrad/io/staged_folder.hpp"
#include "tapegrad/nn/lora.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/ops/loss.hpp"
#include "tapegrad/ops/shape.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/lr_scheduler.hpp"
#include "tapegrad/pretrained/gpt2.hpp"
#include "tapegrad/pretrained/llama.hpp"
#include "tapegrad/pretrained/lora_adapter.hpp"
#include "tapegrad/train/gpt_model.hpp"
#include "tapegrad/train/pictures.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/run_folder.hpp"
#include "tapegrad/train/stop_signals.hpp"
#include "tapegrad/train/trainer.hpp"
#include "tapegrad/train/windows.hpp"

namespace tapegrad::train {

namespace fs = std::filesystem;
namespace tt = nn::transformer;

std::int64_t default_eval_every(std::int64_t steps) {
  return std::clamp<std::int64_t>(steps / 8, std::min<std::int64_t>(25, steps), 250);
}

namespace {

std::string number_text(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// ---- the options, the folders ---------------------------------------------------------------------

// --init-from: the folder's config and its weights, every check made (the library's: config.json
// field by field, each key and shape) before the data is read or a parameter allocated. A GPT-2
// folder fills `config` and `weights`, a Llama folder `llama` and `llama_weights`.
struct InitFrom {
  std::optional<pretrained::GPT2Config> config;
  std::optional<pretrained::GPT2Weights> weights;
  std::optional<pretrained::LlamaFolderConfig> llama;
  std::optional<pretrained::LlamaWeights> llama_weights;
};

// A Llama folder's config, weights and tokenizer.json, opened as a GPT-2's is below.
std::optional<InitFrom> open_llama_init_from(GPTRunOptions& o) {
  const fs::path dir(o.init_from);
  std::error_code ec;
  check<DataError>(fs::is_regular_file(dir / "tokenizer.json", ec), "--init-from ", o.init_from,
                   ": expected the model's tokenizer.json in the folder, got none (copy it from "
                   "the model's repository)");
  InitFrom init;
  init.llama = pretrained::read_llama_config((dir / "config.json").string());
  const nn::transformer::LlamaConfig& c = init.llama->model;
  const std::int64_t context = c.max_position_embeddings();
  if (o.block_size == 0) o.block_size = std::min<std::int64_t>(context, GPTLimits::kMaxBlockSize);
  check<ValueError>(o.block_size <= context, "--block-size ", o.block_size,
                    ": expected at most the max_position_embeddings of ", o.init_from, " (",
                    context, ")");
  o.n_layer = c.num_hidden_layers(), o.n_head = c.num_attention_heads(), o.n_embd = c.hidden_size();
  o.pos = "rope", o.norm = "rmsnorm", o.mlp = "swiglu", o.gelu = "none", o.attention = "causal";
  o.text.tokenizer = "hf:" + (dir / "tokenizer.json").string();
  init.llama_weights.emplace(o.init_from, c);
  return init;
}

// Opens --init-from's folder; the options then describe its model (for the run's description and
// the pictures), and --block-size defaults to its n_positions (a Llama's max_position_embeddings).
std::optional<InitFrom> open_init_from(GPTRunOptions& o) {
  if (o.init_from.empty()) return std::nullopt;
  std::error_code ec;
  if (fs::is_regular_file(fs::path(o.init_from) / "config.json", ec) &&
      detail::naming_flag("--init-from",
                          [&] { return pretrained::read_model_type(o.init_from); }) == "llama")
    return open_llama_init_from(o);
  const std::string weights = detail::naming_flag(
      "--init-from", [&] { return pretrained::gpt2_weights_path(o.init_from); });
  const pretrained::GPT2Config c = detail::naming_flag("--init-from", [&] {
    return pretrained::read_gpt2_config((fs::path(o.init_from) / "config.json").string());
  });
  if (o.block_size == 0)
    o.block_size = std::min<std::int64_t>(c.n_positions, GPTLimits::kMaxBlockSize);
  check<ValueError>(o.block_size <= c.n_positions, "--block-size ", o.block_size,
                    ": expected at most the n_positions of ", o.init_from, " (", c.n_positions,
                    ")");
  const tt::GPTConfig g = c.gpt_config();
  o.n_layer = g.n_layer(), o.n_head = g.n_head(), o.n_embd = g.n_embd();
  o.pos = g.position(), o.norm = g.norm(), o.mlp = g.mlp(), o.gelu = g.gelu();
  o.attention = g.attention();
  o.text.tokenizer = "gpt2:" + o.init_from;
  InitFrom init;
  init.config = c;
  detail::naming_flag("--init-from", [&] { init.weights.emplace(weights, c); });
  return init;
}

bool is_llama(const std::optional<InitFrom>& init) { return init && init->llama; }

// --lora-targets as a list, or PEFT's default for the model.
std::vector<std::string> lora_targets(const GPTRunOptions& o, bool llama) {
  if (o.lora_targets.empty())
    return llama ? std::vector<std::string>{"q_proj", "v_proj"}
                 : std::vector<std::string>{"c_attn"};
  std::vector<std::string> targets;
  std::stringstream list(o.lora_targets);
  for (std::string name; std::getline(list, name, ',');) {
    check<ValueError>(!name.empty(), "--lora-targets: expected comma-separated module names, got '",
                      o.lora_targets, "'");
    targets.push_back(name);
  }
  return targets;
}

// --export-hf's folder, taken at the start for the whole run: GPT-2's choices only, absent or empty
// (hours of training must not end in a refusal, nor overwrite another model's files), locked
// against a second run, and written whole at the end (io/staged_folder.hpp).
std::unique_ptr<io::StagedFolder> open_export(const GPTRunOptions& o,
                                              const std::optional<InitFrom>& init) {
  if (o.export_hf.empty()) return nullptr;
  check<ValueError>(is_llama(init) || (o.pos == "learned" && o.norm == "layernorm" &&
                                       o.mlp == "gelu" && o.attention == "causal"),
                    "--export-hf: GPT-2's layout holds --pos learned --norm layernorm --mlp gelu "
                    "only, got --pos ",
                    o.pos, " --norm ", o.norm, " --mlp ", o.mlp,
                    o.attention == "causal" ? "" : " --attention " + o.attention);
  check<ValueError>(
      !io::same_file(o.export_hf, o.out) &&
          fs::path(o.export_hf).lexically_normal() != fs::path(o.out).lexically_normal(),
      "--export-hf: expected a folder other than --out ('", o.out,
      "'), which holds the checkpoints");
  return std::make_unique<io::StagedFolder>(o.export_hf, "--export-hf");
}

// --export-adapter's folder, taken at the start as --export-hf's is.
std::unique_ptr<io::StagedFolder> open_export_adapter(const GPTRunOptions& o) {
  if (o.export_adapter.empty()) return nullptr;
  for (const auto& [flag, other] :
       {std::pair{"--out", o.out}, std::pair{"--export-hf", o.export_hf}})
    check<ValueError>(other.empty() || (!io::same_file(o.export_adapter, other) &&
                                        fs::path(o.export_adapter).lexically_normal() !=
                                            fs::path(other).lexically_normal()),
                      "--export-adapter: expected a folder other than ", flag, " ('", other, "')");
  return std::make_unique<io::StagedFolder>(o.export_adapter, "--export-adapter");
}

// Whether `name` is one of the files a GPT run writes into its --out folder.
bool is_run_output(const std::string& name) {
  for (const char* ours : {"last.safetensors", "best.safetensors", "loss.dat", "val.dat",
                           "plots.gp", "loss.png", "attention.png"})
    if (name == ours) return true;
  return name.rfind("attention_l", 0) == 0 && name.ends_with(".dat");
}

// An output never replaces an input: ValueError naming both. The inputs: the text or token file,
// the tokenizer's files, --init-from's folder; the outputs: the run's files already in --out (one
// that does not exist yet is no input) and the export's folder. (--resume reads last.safetensors
// and replaces it: that file is the run's own, not an input here.)
void check_no_output_replaces_an_input(const GPTRunOptions& o) {
  std::vector<io::NamedFile> in, out;
  if (!o.text.tokens.empty()) in.push_back({"--tokens", o.text.tokens});
  for (const std::string& f :
       o.text.tokens.empty() && o.text.data.empty() ? data::fortune_files() : o.text.data)
    in.push_back({"--data", f});
  const auto folder_files = [&](const std::string& flag, const std::string& dir,
                                std::initializer_list<const char*> names) {
    in.push_back({flag, dir});
    for (const char* name : names) in.push_back({flag, (fs::path(dir) / name).string()});
  };
  if (!o.init_from.empty())
    folder_files("--init-from", o.init_from,
                 {"config.json", "model.safetensors", "model.safetensors.index.json", "vocab.json",
                  "merges.txt", "tokenizer.json"});
  else if (o.text.tokenizer.rfind("gpt2:", 0) == 0)
    folder_files("--tokenizer", o.text.tokenizer.substr(5),
                 {"encoder.json", "vocab.bpe", "vocab.json", "merges.txt"});
  if (o.text.tokenizer.rfind("bpe-model:", 0) == 0)
    in.push_back({"--tokenizer", o.text.tokenizer.substr(10)});
  if (o.text.tokenizer.rfind("hf:", 0) == 0)
    in.push_back({"--tokenizer", o.text.tokenizer.substr(3)});
  std::error_code ec;
  for (fs::directory_iterator it(o.out, ec), end; !ec && it != end; it.increment(ec))
    if (is_run_output(it->path().filename().string()))
      out.push_back({"--out", it->path().string()});
  if (!o.export_hf.empty()) out.push_back({"--export-hf", o.export_hf});
  if (!o.export_adapter.empty()) out.push_back({"--export-adapter", o.export_adapter});
  io::check_outputs_spare_inputs(out, in);
}

// ---- the model -----------------------------------------------------------------------------------

tt::GPTConfig model_config(const GPTRunOptions& o, const data::Tokenizer& tokenizer,
                           const std::optional<InitFrom>& init) {
  if (init && init->config) {
    if (tokenizer.vocab_size() != init->config->vocab_size)
      throw DataError("--init-from " + o.init_from + ": its tokenizer has " +
                      std::to_string(tokenizer.vocab_size()) +
                      " tokens, config.json's vocab_size is " +
                      std::to_string(init->config->vocab_size));
    return init->config->gpt_config(o.dropout);
  }
  tt::GPTConfig c = tt::GPTConfig(tokenizer.vocab_size(), o.block_size)
                        .n_layer(o.n_layer)
                        .n_head(o.n_head)
                        .n_embd(o.n_embd)
                        .dropout(o.dropout)
                        .attention(o.attention)
                        .norm(o.norm)
                        .mlp(o.mlp)
                        .gelu(o.gelu);
  return with_position(c, o.pos);
}

// The model, its optimizer and schedule, and the generators they draw from: everything a step
// changes, which the checkpoint saves. Built in place (the optimizer holds the model's parameters).
// The model is the GPT or, from a Llama folder, a LlamaForCausalLM; with --lora-r its target
// Linears carry adapters and every other weight is frozen (out of the optimizer's groups).
struct Model {
  Model(const GPTRunOptions& o, const tt::GPTConfig* config, const std::optional<InitFrom>& init)
      : model_gen(std::make_shared<Generator>(o.seed)),
        data_gen(std::make_shared<Generator>(o.seed + 1)),
        lm(build(o, config, init, model_gen)),
        gpt(dynamic_cast<tt::GPT*>(lm.get())),
        llama(dynamic_cast<tt::LlamaForCausalLM*>(lm.get())),
        opt(optimizer_groups(o, gpt ? gpt->parameter_groups() : llama->parameter_groups())),
        sched(opt, schedule(o)) {}
  static std::shared_ptr<tt::CausalLM> build(const GPTRunOptions& o, const tt::GPTConfig* config,
                                             const std::optional<InitFrom>& init,
                                             std::shared_ptr<Generator> gen) {
    std::shared_ptr<tt::CausalLM> model;
    {
      std::optional<nn::SkipInitGuard> skip;  // --init-from: every weight is read from the folder
      if (init) skip.emplace();
      if (is_llama(init)) {
        tt::LlamaConfig c = init->llama->model;
        c.attention_dropout(o.dropout);  // (a Llama's only dropout)
        auto llama = std::make_shared<tt::LlamaForCausalLM>(c, gen);
        init->llama_weights->read_into(*llama);
        model = llama;
      } else {
        auto gpt = std::make_shared<tt::GPT>(*config, gen);
        if (init) init->weights->read_into(*gpt);
        model = gpt;
      }
    }
    if (o.lora_r > 0)  // (A drawn from the model's generator, after the weights are read)
      nn::add_lora(*model, lora_targets(o, is_llama(init)),
                   nn::LoRAOptions(o.lora_r).lora_alpha(o.lora_alpha).lora_dropout(o.lora_dropout),
                   gen);
    return model;
  }
  // nanoGPT's AdamW: weight decay on the matrices only (under LoRA, A and B).
  static std::vector<optim::AdamW::Group> optimizer_groups(const GPTRunOptions& o,
                                                           const nn::ParameterGroups& groups) {
    const auto adamw =
        optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).weight_decay(o.weight_decay);
    std::vector<optim::AdamW::Group> out;
    if (!groups.decay.empty()) out.push_back({groups.decay, adamw});
    if (!groups.no_decay.empty())
      out.push_back({groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)});
    return out;
  }
  static optim::LambdaLR::LrLambda schedule(const GPTRunOptions& o) {
    const double min_ratio = o.min_lr / o.lr;
    return [=, warmup = o.warmup, steps = o.steps](std::int64_t e) {
      return optim::cosine_with_warmup(e, warmup, steps, min_ratio);
    };
  }

  std::shared_ptr<Generator> model_gen, data_gen;
  std::shared_ptr<tt::CausalLM> lm;
  tt::GPT* gpt;                 ///< lm, when a GPT
  tt::LlamaForCausalLM* llama;  ///< lm, when a Llama
  optim::AdamW opt;
  optim::LambdaLR sched;
};

// The cross-entropy of every next token: its mean for training, its sum for validation (the
// trainer divides by the tokens scored), both without the targets the tokenizer does not score.
Task language_model_task(Model& m, std::int64_t ignore) {
  Task task;
  task.loss = [&m, ignore](const data::Batch& b) {
    return m.gpt ? m.gpt->loss(b.x, b.y, ignore) : m.llama->loss(b.x, b.y, ignore);
  };
  task.loss_sum = [&m, ignore](const data::Batch& b) {
    return summed_loss(*m.lm, b.x, b.y, ignore);
  };
  return task;
}

std::int64_t count(const std::vector<Parameter>& ps) {
  std::int64_t n = 0;
  for (const Parameter& p : ps) n += std::int64_t(p.numel());
  return n;
}

std::int64_t trainable_count(const nn::Module& model) {
  std::int64_t n = 0;
  for (const Parameter& p : model.parameters())
    if (p.requires_grad()) n += std::int64_t(p.numel());
  return n;
}

// The GPT's num_params(false) (its position table included), a Llama's parameters (the tied
// table once).
std::int64_t parameter_count(const Model& m) {
  return m.gpt ? m.gpt->num_params(false) : count(m.lm->parameters());
}

// ---- what the run shows --------------------------------------------------------------------------

void describe(const Model& m, const Run& run, const TextData& d, const GPTRunOptions& o,
              const Console& con, std::int64_t eval_every) {
  if (d.format == "tokens")
    std::cout << "gpt: the token file " << o.text.tokens << " (" << d.train.size()
              << " training and " << d.val.size() << " validation tokens, read from the file";
  else
    std::cout << "gpt: " << d.files.size() << " file" << (d.files.size() == 1 ? "" : "s")
              << " as --data-format " << d.format << ", "
              << (d.format == "text"
                      ? "one stream split by characters at --val-fraction " +
                            number_text(o.text.val_fraction)
                      : std::to_string(d.split.train.size()) + " training and " +
                            std::to_string(d.split.val.size()) + " validation entries")
              << " (" << d.train.size() << " and " << d.val.size() << " tokens, "
              << fixed(double(d.train_bytes) / double(d.train.size()), 2) << " bytes per token";
  if (d.tokenizer.name() == "char")
    std::cout << "; " << std::count(d.val.ids.begin(), d.val.ids.end(), data::Vocabulary::kUnk)
              << " validation characters are <unk>";
  std::cout << "), tokenizer " << o.text.tokenizer << ", vocabulary " << d.tokenizer.vocab_size()
            << "\n     n_layer=" << o.n_layer << " n_head=" << o.n_head << " n_embd=" << o.n_embd
            << " block_size=" << o.block_size << " pos=" << o.pos
            << (o.attention == "causal" || o.pos == "alibi" ? "" : " attention=" + o.attention)
            << " norm=" << o.norm << " mlp=" << o.mlp << " gelu=" << o.gelu
            << " dropout=" << o.dropout << ", " << parameter_count(m)
            << (m.gpt ? " parameters (position table included; " : " parameters (")
            << fixed(flops_per_token(*m.lm) / 1e6, 2) << " MFLOP per token)";
  if (o.lora_r > 0)
    std::cout << ", LoRA r=" << o.lora_r << " lora_alpha=" << o.lora_alpha
              << " lora_dropout=" << o.lora_dropout << " on " << nn::lora_layers(*m.lm).size()
              << " layers: " << trainable_count(*m.lm) << " parameters train, the rest frozen";
  std::cout << "; batch " << o.batch_size
            << (con.world > 1 ? " per rank x " + std::to_string(con.world) + " ranks" : "")
            << (o.grad_accum > 1 ? " x " + std::to_string(o.grad_accum) + " micro-batches" : "")
            << (o.init_from.empty() ? "" : ", from " + o.init_from)
            << (o.bf16 ? ", products in bf16 (validation in float32)" : "")
            << (o.recompute ? ", blocks recomputed in backward" : "") << ", " << o.steps
            << " steps, eval every " << eval_every << ", threads=" << o.threads
            << (run.step > 0 ? ", resumed at step " + std::to_string(run.step) : std::string())
            << std::endl;
}

// loss.png and attention.png (through gnuplot, when installed), from data files in OUT; then the
// pictures that were drawn are listed (no attention.png without a validation line to show).
void draw_pictures(const Model& m, const Run& run, const TextData& d, const GPTRunOptions& o,
                   const fs::path& dir) {
  const std::u32string line = attention_line(d, std::size_t(o.block_size));
  std::vector<Array> weights;
  std::vector<std::string> labels;  // each token's text, for the heatmaps' axes
  std::vector<std::int64_t> enc =
      d.tokenizer.encode(data::encode_utf8(line), "the validation text");
  enc.resize(std::min(enc.size(), std::size_t(o.block_size)));
  if (!enc.empty() && m.gpt) {  // (a Llama's attention keeps no weights to draw)
    autograd::NoGradGuard no_grad;
    m.gpt->eval();
    IndexArray ids = IndexArray::from_shape({1, enc.size()});
    std::copy(enc.begin(), enc.end(), ids.begin());
    m.gpt->features(ids, &weights);
    for (const std::int64_t id : enc)
      labels.push_back(detail::tic_label(d.tokenizer.decode(&id, 1)));
  }
  write_loss_data(dir, run.train_losses, run.val_history);
  detail::write_attention_data(dir, weights);
  std::vector<Picture> pictures = {
      loss_picture("GPT on " +
                       std::string(d.format == "tokens"  ? "your tokens"
                                   : o.text.data.empty() ? "the fortunes"
                                                         : "your text") +
                       ": " + std::to_string(o.n_layer) + " layers, width " +
                       std::to_string(o.n_embd) + ", " + o.pos + " positions",
                   d.tokenizer.name() == "char" ? "character" : "token")};
  if (!weights.empty() && !labels.empty())
    pictures.push_back(detail::attention_picture(weights.size(), std::size_t(o.n_head), labels));
  write_plot_script(
      dir,
      "# Draws the pictures of examples/gpt from the data files in this folder: gnuplot plots.gp",
      pictures);
  report(draw(dir, pictures));
  if (!line.empty()) std::cout << "attention line: \"" << data::encode_utf8(line) << "\"\n";
}

void print_sample(tt::CausalLM& model, const TextData& d, const GPTRunOptions& o) {
  if (o.sample_tokens == 0) return;
  Generator sample_gen(o.seed + 2);
  // The prompt is the end of an entry, "%\n", for fortunes: the model writes the start of a new
  // one. A text (or a token file) has no entries: a line end, and the model starts a line.
  const std::vector<std::int64_t> start =
      d.tokenizer.encode(d.format == "fortunes" ? "%\n" : "\n", "the prompt");
  IndexArray prompt = IndexArray::from_shape({1, start.size()});
  std::copy(start.begin(), start.end(), prompt.begin());
  const auto options = tt::GenerateOptions(o.sample_tokens).temperature(0.8).top_k(200);
  const auto t0 = std::chrono::steady_clock::now();
  model.eval();
  const IndexArray out = tt::generate(model, prompt, options, sample_gen);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string unit = d.tokenizer.name() == "char" ? "characters" : "tokens";
  std::cout << "sample (temperature 0.8, top-k 200, " << o.sample_tokens << " " << unit << ", "
            << fixed(double(o.sample_tokens) / seconds, 0) << " " << unit << "/s "
            << (model.supports_cache() ? "with the cache"
                                       : "without a cache: the attention keeps none")
            << "):\n"
            << d.tokenizer.decode(out.data() + start.size(), out.size() - start.size()) << "\n";
}

// --export-hf: the final model in Hugging Face's layout, with GPT-2's tokenizer when it was the
// one trained with, and --init-from's config.json fields (its dropouts) when there was one;
// written beside the folder, then renamed into place whole.
void export_hf(Model& m, const Run& run, const data::Tokenizer& tokenizer, const GPTRunOptions& o,
               const std::optional<InitFrom>& init, io::StagedFolder* target) {
  if (target == nullptr) return;
  if (o.merge_adapter) {
    const std::size_t merged = nn::merge_lora(*m.lm);
    std::cout << "merged the LoRA adapters of " << merged << " layers into their weights\n";
  }
  const data::GPT2Tokenizer* gpt2 = tokenizer.gpt2();
  try {  // (the writer names the staging folder, which the user never gave)
    if (m.llama) {
      pretrained::save_llama(*m.llama, target->staging().string(), &*init->llama);
      // The tokenizer's files as the folder had them (tokenizer.json the one trained with).
      for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                               "generation_config.json"}) {
        const fs::path from = fs::path(o.init_from) / name;
        std::error_code ec;
        if (fs::is_regular_file(from, ec))
          fs::copy_file(from, target->staging() / name, fs::copy_options::overwrite_existing);
      }
    } else {
      pretrained::save_gpt2(*m.gpt, target->staging().string(), gpt2,
                            init ? &*init->config : nullptr);
    }
    target->commit();
  } catch (const std::exception& e) {
    throw CheckpointError("--export-hf: cannot write the model into '" + o.export_hf + "' (" +
                              e.what() + "); nothing was exported. The trained model is in " +
                              o.out + ": the same flags with --resume export it again",
                          "IoError");
  }
  std::cout << "exported the model after step " << run.step << " (validation loss "
            << fixed(run.val_history.back().second, 4) << ") to " << o.export_hf
            << " in Hugging Face's layout"
            << (gpt2 || m.llama ? ""
                                : " (no vocab.json and merges.txt: the tokenizer is not GPT-2's)")
            << "\n";
}

// --export-adapter: the LoRA adapters in PEFT's layout, before --merge-adapter folds them away.
void export_adapter(const Model& m, const Run& run, const GPTRunOptions& o,
                    io::StagedFolder* target) {
  if (target == nullptr) return;
  pretrained::save_lora_adapter(*m.lm, target->staging().string(), o.init_from);
  target->commit();
  std::cout << "exported the LoRA adapters after step " << run.step << " to " << o.export_adapter
            << " in PEFT's layout\n";
}

// The closing line for bench/gpt_compare (seconds: the training steps alone; wall_seconds: the
// whole run, data, validations, checkpoints and pictures included); the exit status: did the
// validation loss fall?
int report_result(const tt::CausalLM& model, const Run& run, const GPTRunOptions& o,
                  const Console& con, double wall_seconds) {
  const double median = run.median_step_seconds();
  const double tokens = double(o.batch_size * o.grad_accum * con.world * o.block_size);
  const double final_val = run.val_history.back().second,
               first_val = run.val_history.front().second;
  std::cout << "gpt result: steps=" << o.steps << " val_loss=" << fixed(final_val, 4)
            << " val_bits_per_byte=" << fixed(run.val_bits_per_byte, 4)
            << " best_val_loss=" << fixed(run.best_val, 4)
            << " train_loss=" << fixed(run.train_losses.back(), 4)
            << " step_ms_median=" << fixed(median * 1e3, 3)
            << " tokens_per_s=" << fixed(median > 0 ? tokens / median : 0.0, 1)
            << " ranks=" << con.world
            << " comm_exposed_ms=" << fixed(run.exposed_communication_ms, 3)
            << " flops_per_token=" << std::int64_t(flops_per_token(model))
            << " seconds=" << fixed(run.train_seconds, 1)
            << " wall_seconds=" << fixed(wall_seconds, 1) << std::endl;
  if (!(final_val < first_val)) {
    std::cerr << "the validation loss did not fall: " << first_val << " -> " << final_val << '\n';
    return 1;
  }
  return 0;
}

}  // namespace

// ---- the options checked together -----------------------------------------------------------------

void check_options(GPTRunOptions& o) {
  const TextOptions& t = o.text;
  const auto tokenizer_is = [&](const char* kind) { return t.tokenizer.rfind(kind, 0) == 0; };
  if (!tokenizer_is("gpt2:") && !tokenizer_is("bpe-model:") && !tokenizer_is("hf:") &&
      t.tokenizer != "char") {
    const std::string n = tokenizer_is("bpe:") ? t.tokenizer.substr(4) : "";
    const bool ok = !n.empty() && n.size() <= 6 &&
                    n.find_first_not_of("0123456789") == std::string::npos &&
                    std::stoul(n) >= 257 && std::stoul(n) <= 65536;
    check<ValueError>(ok,
                      "--tokenizer: expected char, bpe:N with N in [257, 65536], "
                      "bpe-model:FILE, gpt2:DIR or hf:tokenizer.json, got '",
                      t.tokenizer, "'");
  }
  check<ValueError>(t.tokens.empty() || t.data.empty(),
                    "--tokens and --data do not go together: train on one of them");
  check<ValueError>(t.tokens.empty() || tokenizer_is("gpt2:") || tokenizer_is("bpe-model:") ||
                        tokenizer_is("hf:") || !o.init_from.empty(),
                    "--tokens needs --tokenizer gpt2:DIR or bpe-model:FILE, the tokenizer that "
                    "wrote it (the checkpoint keeps it, to sample)");
  check<ValueError>(o.min_lr <= o.lr, "--min-lr: expected at most --lr (", number_text(o.lr),
                    "), got ", number_text(o.min_lr));
  if (o.init_from.empty()) {
    check<ValueError>(o.n_embd % o.n_head == 0, "--n-head: expected a divisor of --n-embd (",
                      o.n_embd, "), got ", o.n_head);
    check<ValueError>(o.pos != "rope" || (o.n_embd / o.n_head) % 2 == 0,
                      "--pos rope: expected an even head size --n-embd / --n-head, got ",
                      o.n_embd / o.n_head);
    check<ValueError>(o.mlp == "gelu" || o.gelu == "none",
                      "--gelu: it chooses the GELU of --mlp "
                      "gelu; --mlp ",
                      o.mlp, " has none");
    check<ValueError>(o.pos != "alibi" || o.attention == "causal" || o.attention == "alibi",
                      "--pos alibi: ALiBi is an attention (its bias is the positions); it does "
                      "not go with --attention ",
                      o.attention);
  }
  // LoRA: what the adapters' flags need, refused before anything is read.
  if (o.lora_r == 0) {
    check<ValueError>(o.lora_targets.empty(),
                      "--lora-targets: it names the layers --lora-r R "
                      "adapts; give --lora-r");
    check<ValueError>(
        o.export_adapter.empty(),
        "--export-adapter: expected --lora-r R, the "
        "adapters to write; without it every weight trains (--export-hf writes them)");
    check<ValueError>(!o.merge_adapter,
                      "--merge-adapter: expected --lora-r R, the adapters to "
                      "merge; without it every weight trains");
  } else {
    check<ValueError>(o.export_hf.empty() || o.merge_adapter,
                      "--export-hf: the model trains LoRA adapters (--lora-r) and the folder holds "
                      "a plain model; give --merge-adapter to fold them into the weights, or "
                      "--export-adapter DIR to write them in PEFT's layout instead");
  }
  check<ValueError>(!o.merge_adapter || !o.export_hf.empty(),
                    "--merge-adapter: it folds the "
                    "adapters into the weights --export-hf writes; give --export-hf DIR");
  if (o.warmup >= o.steps) {
    std::cout << "note: --warmup " << o.warmup << " is not shorter than the run (--steps "
              << o.steps << "): the learning rate warms up over " << o.steps - 1
              << " steps and reaches --lr at the last one\n";
    o.warmup = o.steps - 1;
  }
  if (o.eval_every == 0) o.eval_every = default_eval_every(o.steps);
}

// ---- the run ---------------------------------------------------------------------------------------

int run_gpt(GPTRunOptions o, const Session& session) {
  const auto start = std::chrono::steady_clock::now();
  const Console con{session.rank(), session.world(), session.in_place(), o.quiet};
  // 1. The options, and --init-from's folder (its config: the model's sizes, --block-size's
  //    default), every check made before anything large is read.
  const std::optional<InitFrom> init = open_init_from(o);
  check_options(o);
  set_num_threads(static_cast<int>(o.threads));
  // 2. The run's folders, taken for the whole run before anything else is read: a second run
  //    given either is refused now. Only rank 0 writes into them.
  const std::unique_ptr<io::StagedFolder> export_to =
      con.rank == 0 ? open_export(o, init) : nullptr;
  const std::unique_ptr<io::StagedFolder> adapter_to =
      con.rank == 0 ? open_export_adapter(o) : nullptr;
  check_no_output_replaces_an_input(o);
  auto folder = std::make_unique<RunFolder>(o.out, o.resume, con.rank == 0, is_run_output);
  // 3. The data: the tokens (its fixed validation windows come after the memory bound, in 4).
  const TextData text = load_text(o.text, std::size_t(o.block_size));
  for (const std::string& w : text.warnings) std::cerr << "gpt: warning: " << w << "\n";
  // 4. The model (its memory bounded first; with --init-from its weights read from the folder),
  //    its optimizer and schedule.
  std::map<std::string, std::string> notes;
  std::optional<Model> model;
  if (is_llama(init)) {
    const tt::LlamaConfig& c = init->llama->model;
    if (text.tokenizer.vocab_size() > c.vocab_size())
      throw DataError("--init-from " + o.init_from + ": its tokenizer.json has " +
                      std::to_string(text.tokenizer.vocab_size()) +
                      " tokens, more than config.json's vocab_size " +
                      std::to_string(c.vocab_size()));
    model.emplace(o, nullptr, init);
    notes = {{"gpt.model", "llama"},
             {"gpt.llama_config", init->llama->to_json()},
             {"gpt.tokenizer", text.tokenizer.name()},
             {"gpt.vocab", text.tokenizer.to_text()},
             {"gpt.dropout", py_float(o.dropout)}};
  } else {
    const tt::GPTConfig config = model_config(o, text.tokenizer, init);
    tt::validate(config);
    check_parameter_count(
        config, init ? "--init-from " + o.init_from : "--n-layer, --n-embd and the vocabulary");
    tt::GPTConfig windows = config;  // what a step holds: windows of --block-size tokens
    windows.block_size(o.block_size);
    if (o.lora_r == 0 && !o.recompute)
      check_training_memory(windows, o.batch_size, o.grad_accum, o.eval_windows);
    model.emplace(o, &config, init);
    notes = model_notes(config, text.tokenizer);
  }
  Model& m = *model;
  if (m.llama || o.lora_r > 0 || o.recompute)  // counted from the model built: what trains
    check_training_memory(m.gpt ? sizes_of(m.gpt->config()) : sizes_of(m.llama->config()),
                          double(count(m.lm->parameters())), double(trainable_count(*m.lm)),
                          o.batch_size, o.block_size, o.recompute);
  // Another adapter is another model: --resume refuses it, naming the note (0: none).
  notes["gpt.lora_r"] = std::to_string(o.lora_r);
  if (o.lora_r > 0) {
    const pretrained::LoRAAdapterConfig lora = pretrained::lora_adapter_config_of(*m.lm);
    notes["gpt.lora_alpha"] = py_float(o.lora_alpha);
    notes["gpt.lora_dropout"] = py_float(o.lora_dropout);
    std::string targets;
    for (const std::string& t : lora.target_modules) targets += (targets.empty() ? "" : ",") + t;
    notes["gpt.lora_targets"] = targets;
  }
  const auto T = std::size_t(o.block_size), B = std::size_t(o.batch_size);
  Validation validation =  // (after the bound, which counts its windows)
      validation_windows(text, T, std::size_t(o.eval_windows), B, o.text.split_seed);
  validation.num_classes = text.tokenizer.vocab_size();
  notes["gpt.train_block_size"] = std::to_string(o.block_size);  // (--init-from: not n_positions)
  if (text.format != "tokens") notes["gpt.data_format"] = text.format;  // other text, other run
  // 5. The training: the Trainer's loop (trainer.hpp).
  Trainer trainer(*m.lm, m.opt, &m.sched,
                  TrainerOptions()
                      .steps(o.steps)
                      .grad_accum(o.grad_accum)
                      .clip(o.clip)
                      .eval_every(o.eval_every)
                      .stop_after(o.stop_after)
                      .out(o.out)
                      .resume(o.resume)
                      .bf16(o.bf16)
                      .recompute(o.recompute)
                      .profile(o.profile)
                      .quiet(o.quiet)
                      .check_in_sync(o.check_in_sync)
                      .pictures(false)  // loss.png with the attention heatmaps, below
                      .program("gpt"));
  trainer.track("model", m.model_gen);
  trainer.notes(notes, note_or_default);
  trainer.use_folder(std::move(folder));
  trainer.on_start([&](const Run& run) { describe(m, run, text, o, con, o.eval_every); });
  RandomWindows batches(text.train, T, B, m.data_gen, con.rank, con.world, "data");
  const Run run =
      trainer.fit(language_model_task(m, text.tokenizer.ignore_index()), batches, validation);
  if (run.stopped_by != 0) return StopSignals::exit_status(run.stopped_by);
  if (o.stop_after > 0 && o.stop_after < o.steps) return 0;
  if (con.rank != 0) return 0;  // rank 0 alone draws, samples and reports
  // 6. What the run shows.
  draw_pictures(m, run, text, o, o.out);
  print_sample(*m.lm, text, o);
  export_adapter(m, run, o, adapter_to.get());
  export_hf(m, run, text.tokenizer, o, init, export_to.get());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report_result(*m.lm, run, o, con, wall);
}

}  // namespace tapegrad::train
