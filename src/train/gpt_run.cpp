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
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/ops/loss.hpp"
#include "tapegrad/ops/shape.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/lr_scheduler.hpp"
#include "tapegrad/pretrained/gpt2.hpp"
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
// field by field, each key and shape) before the data is read or a parameter allocated.
struct InitFrom {
  pretrained::GPT2Config config;
  pretrained::GPT2Weights weights;
};

// Opens --init-from's folder; the options then describe its model (for the run's description and
// the pictures), and --block-size defaults to its n_positions.
std::optional<InitFrom> open_init_from(GPTRunOptions& o) {
  if (o.init_from.empty()) return std::nullopt;
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
  return detail::naming_flag("--init-from", [&] {
    return InitFrom{c, pretrained::GPT2Weights(weights, c)};
  });
}

// --export-hf's folder, taken at the start for the whole run: GPT-2's choices only, absent or empty
// (hours of training must not end in a refusal, nor overwrite another model's files), locked
// against a second run, and written whole at the end (io/staged_folder.hpp).
std::unique_ptr<io::StagedFolder> open_export(const GPTRunOptions& o) {
  if (o.export_hf.empty()) return nullptr;
  check<ValueError>(
      o.pos == "learned" && o.norm == "layernorm" && o.mlp == "gelu" && o.attention == "causal",
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
                 {"config.json", "model.safetensors", "vocab.json", "merges.txt"});
  else if (o.text.tokenizer.rfind("gpt2:", 0) == 0)
    folder_files("--tokenizer", o.text.tokenizer.substr(5),
                 {"encoder.json", "vocab.bpe", "vocab.json", "merges.txt"});
  if (o.text.tokenizer.rfind("bpe-model:", 0) == 0)
    in.push_back({"--tokenizer", o.text.tokenizer.substr(10)});
  std::error_code ec;
  for (fs::directory_iterator it(o.out, ec), end; !ec && it != end; it.increment(ec))
    if (is_run_output(it->path().filename().string()))
      out.push_back({"--out", it->path().string()});
  if (!o.export_hf.empty()) out.push_back({"--export-hf", o.export_hf});
  io::check_outputs_spare_inputs(out, in);
}

// ---- the model -----------------------------------------------------------------------------------

tt::GPTConfig model_config(const GPTRunOptions& o, const data::Tokenizer& tokenizer,
                           const std::optional<InitFrom>& init) {
  if (init) {
    if (tokenizer.vocab_size() != init->config.vocab_size)
      throw DataError("--init-from " + o.init_from + ": its tokenizer has " +
                      std::to_string(tokenizer.vocab_size()) +
                      " tokens, config.json's vocab_size is " +
                      std::to_string(init->config.vocab_size));
    return init->config.gpt_config(o.dropout);
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
struct Model {
  Model(const GPTRunOptions& o, const tt::GPTConfig& config, bool skip_init)
      : model_gen(std::make_shared<Generator>(o.seed)),
        data_gen(std::make_shared<Generator>(o.seed + 1)),
        gpt(build(config, model_gen, skip_init)),
        opt(optimizer_groups(o, *gpt)),
        sched(opt, schedule(o)) {}
  static std::unique_ptr<tt::GPT> build(const tt::GPTConfig& config, std::shared_ptr<Generator> gen,
                                        bool skip_init) {
    std::optional<nn::SkipInitGuard> skip;  // --init-from: every weight is read from the folder
    if (skip_init) skip.emplace();
    return std::make_unique<tt::GPT>(config, std::move(gen));
  }
  // nanoGPT's AdamW: weight decay on the matrices only.
  static std::vector<optim::AdamW::Group> optimizer_groups(const GPTRunOptions& o, tt::GPT& model) {
    const auto adamw =
        optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).weight_decay(o.weight_decay);
    const tt::ParameterGroups groups = model.parameter_groups();
    return {{groups.decay, adamw}, {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}};
  }
  static optim::LambdaLR::LrLambda schedule(const GPTRunOptions& o) {
    const double min_ratio = o.min_lr / o.lr;
    return [=, warmup = o.warmup, steps = o.steps](std::int64_t e) {
      return optim::cosine_with_warmup(e, warmup, steps, min_ratio);
    };
  }

  std::shared_ptr<Generator> model_gen, data_gen;
  std::unique_ptr<tt::GPT> gpt;
  optim::AdamW opt;
  optim::LambdaLR sched;
};

// The cross-entropy of every next token: its mean for training, its sum for validation (the
// trainer divides by the tokens scored), both without the targets the tokenizer does not score.
Task language_model_task(tt::GPT& model, std::int64_t ignore) {
  Task task;
  task.loss = [&model, ignore](const data::Batch& b) { return model.loss(b.x, b.y, ignore); };
  task.loss_sum = [&model, ignore](const data::Batch& b) {
    return summed_loss(model, b.x, b.y, ignore);
  };
  return task;
}

// ---- what the run shows --------------------------------------------------------------------------

void describe(const tt::GPT& model, const Run& run, const TextData& d, const GPTRunOptions& o,
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
            << " dropout=" << o.dropout << ", " << model.num_params(false)
            << " parameters (position table included; " << fixed(model.flops_per_token() / 1e6, 2)
            << " MFLOP per token); batch " << o.batch_size
            << (con.world > 1 ? " per rank x " + std::to_string(con.world) + " ranks" : "")
            << (o.grad_accum > 1 ? " x " + std::to_string(o.grad_accum) + " micro-batches" : "")
            << (o.init_from.empty() ? "" : ", from " + o.init_from)
            << (o.bf16 ? ", products in bf16 (validation in float32)" : "") << ", " << o.steps
            << " steps, eval every " << eval_every << ", threads=" << o.threads
            << (run.step > 0 ? ", resumed at step " + std::to_string(run.step) : std::string())
            << std::endl;
}

// loss.png and attention.png (through gnuplot, when installed), from data files in OUT; then the
// pictures that were drawn are listed (no attention.png without a validation line to show).
void draw_pictures(tt::GPT& model, const Run& run, const TextData& d, const GPTRunOptions& o,
                   const fs::path& dir) {
  const std::u32string line = attention_line(d, std::size_t(o.block_size));
  std::vector<Array> weights;
  std::vector<std::string> labels;  // each token's text, for the heatmaps' axes
  std::vector<std::int64_t> enc =
      d.tokenizer.encode(data::encode_utf8(line), "the validation text");
  enc.resize(std::min(enc.size(), std::size_t(o.block_size)));
  if (!enc.empty()) {
    autograd::NoGradGuard no_grad;
    model.eval();
    IndexArray ids = IndexArray::from_shape({1, enc.size()});
    std::copy(enc.begin(), enc.end(), ids.begin());
    model.features(ids, &weights);
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

void print_sample(tt::GPT& model, const TextData& d, const GPTRunOptions& o) {
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
  const IndexArray out = model.generate(prompt, options, sample_gen);
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
void export_hf(const tt::GPT& model, const Run& run, const data::Tokenizer& tokenizer,
               const GPTRunOptions& o, const std::optional<InitFrom>& init,
               io::StagedFolder* target) {
  if (target == nullptr) return;
  const data::GPT2Tokenizer* gpt2 = tokenizer.gpt2();
  try {  // (the writer names the staging folder, which the user never gave)
    pretrained::save_gpt2(model, target->staging().string(), gpt2, init ? &init->config : nullptr);
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
            << (gpt2 ? "" : " (no vocab.json and merges.txt: the tokenizer is not GPT-2's)")
            << "\n";
}

// The closing line for bench/gpt_compare (seconds: the training steps alone; wall_seconds: the
// whole run, data, validations, checkpoints and pictures included); the exit status: did the
// validation loss fall?
int report_result(const tt::GPT& model, const Run& run, const GPTRunOptions& o, const Console& con,
                  double wall_seconds) {
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
            << " flops_per_token=" << std::int64_t(model.flops_per_token())
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
  if (!tokenizer_is("gpt2:") && !tokenizer_is("bpe-model:") && t.tokenizer != "char") {
    const std::string n = tokenizer_is("bpe:") ? t.tokenizer.substr(4) : "";
    const bool ok = !n.empty() && n.size() <= 6 &&
                    n.find_first_not_of("0123456789") == std::string::npos &&
                    std::stoul(n) >= 257 && std::stoul(n) <= 65536;
    check<ValueError>(ok,
                      "--tokenizer: expected char, bpe:N with N in [257, 65536], "
                      "bpe-model:FILE or gpt2:DIR, got '",
                      t.tokenizer, "'");
  }
  check<ValueError>(t.tokens.empty() || t.data.empty(),
                    "--tokens and --data do not go together: train on one of them");
  check<ValueError>(t.tokens.empty() || tokenizer_is("gpt2:") || tokenizer_is("bpe-model:") ||
                        !o.init_from.empty(),
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
  const std::unique_ptr<io::StagedFolder> export_to = con.rank == 0 ? open_export(o) : nullptr;
  check_no_output_replaces_an_input(o);
  auto folder = std::make_unique<RunFolder>(o.out, o.resume, con.rank == 0, is_run_output);
  // 3. The data: the tokens (its fixed validation windows come after the memory bound, in 4).
  const TextData text = load_text(o.text, std::size_t(o.block_size));
  for (const std::string& w : text.warnings) std::cerr << "gpt: warning: " << w << "\n";
  // 4. The model (its memory bounded first; with --init-from its weights read from the folder),
  //    its optimizer and schedule.
  const tt::GPTConfig config = model_config(o, text.tokenizer, init);
  tt::validate(config);
  check_parameter_count(
      config, init ? "--init-from " + o.init_from : "--n-layer, --n-embd and the vocabulary");
  tt::GPTConfig windows = config;  // what a step holds: windows of --block-size tokens
  windows.block_size(o.block_size);
  check_training_memory(windows, o.batch_size, o.grad_accum, o.eval_windows);
  const auto T = std::size_t(o.block_size), B = std::size_t(o.batch_size);
  Validation validation =  // (after the bound, which counts its windows)
      validation_windows(text, T, std::size_t(o.eval_windows), B, o.text.split_seed);
  validation.num_classes = text.tokenizer.vocab_size();
  Model m(o, config, init.has_value());
  if (init) init->weights.read_into(*m.gpt);
  std::map<std::string, std::string> notes = model_notes(config, text.tokenizer);
  notes["gpt.train_block_size"] = std::to_string(o.block_size);  // (--init-from: not n_positions)
  if (text.format != "tokens") notes["gpt.data_format"] = text.format;  // other text, other run
  // 5. The training: the Trainer's loop (trainer.hpp).
  Trainer trainer(*m.gpt, m.opt, &m.sched,
                  TrainerOptions()
                      .steps(o.steps)
                      .grad_accum(o.grad_accum)
                      .clip(o.clip)
                      .eval_every(o.eval_every)
                      .stop_after(o.stop_after)
                      .out(o.out)
                      .resume(o.resume)
                      .bf16(o.bf16)
                      .profile(o.profile)
                      .quiet(o.quiet)
                      .check_in_sync(o.check_in_sync)
                      .pictures(false)  // loss.png with the attention heatmaps, below
                      .program("gpt"));
  trainer.track("model", m.model_gen);
  trainer.notes(notes, note_or_default);
  trainer.use_folder(std::move(folder));
  trainer.on_start([&](const Run& run) { describe(*m.gpt, run, text, o, con, o.eval_every); });
  RandomWindows batches(text.train, T, B, m.data_gen, con.rank, con.world, "data");
  const Run run =
      trainer.fit(language_model_task(*m.gpt, text.tokenizer.ignore_index()), batches, validation);
  if (run.stopped_by != 0) return StopSignals::exit_status(run.stopped_by);
  if (o.stop_after > 0 && o.stop_after < o.steps) return 0;
  if (con.rank != 0) return 0;  // rank 0 alone draws, samples and reports
  // 6. What the run shows.
  draw_pictures(*m.gpt, run, text, o, o.out);
  print_sample(*m.gpt, text, o);
  export_hf(*m.gpt, run, text.tokenizer, o, init, export_to.get());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report_result(*m.gpt, run, o, con, wall);
}

}  // namespace tapegrad::train
