// examples/toy_training.cpp: the program to run first. It trains the seed tutorials' pipeline
//
//     Embeddings (lut(ids) * sqrt(d_model), padding_idx 0) -> PositionalEncoding (+ Dropout)
//     -> Linear -> cross-entropy over the words, Adam with the Noam schedule
//
// on a toy tagging task, then shows with measured facts that the word embeddings learned and the
// positional encoding did not change. Every claim is checked: the exit status is 0 only if all
// of them hold.
//
//     build/examples/toy_training                  # the defaults: well under a second
//     build/examples/toy_training --help           # every flag
//     build/examples/toy_training --sparse         # SparseAdam for the embedding, Adam for the rest
//     build/examples/toy_training --steps 400 --checkpoint half.safetensors
//     build/examples/toy_training --resume half.safetensors       # continues to --steps (800)
//
// Read it top to bottom: the settings, the optimizers, one training step, the run, the report.
// The toy language, the model, the measurements and the pictures are in examples/toy_training/.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "toy_training/flag_checks.hpp"
#include "toy_training/language.hpp"
#include "toy_training/measure.hpp"
#include "toy_training/model.hpp"
#include "toy_training/pictures.hpp"
#include "toy_training/progress.hpp"
#include "toy_training/report.hpp"

using namespace tapegrad;
using namespace toy;

namespace {

constexpr std::size_t kTrainSentences = 2000, kHeldOutSentences = 500;

// ---- the settings ------------------------------------------------------------------------------

struct Settings {
  std::int64_t steps = 800;
  double lr = 1.0;
  std::int64_t warmup = 40;
  std::int64_t batch_size = 16;
  std::int64_t d_model = 16;
  std::int64_t vocab = 25;
  std::int64_t synonyms = 4;
  std::uint64_t seed = 1;
  int threads = 1;
  bool sparse = false;
  std::string out = "out/toy_training";
  std::string checkpoint;   // default: <out>/checkpoint.safetensors
  std::string resume;
};

// The rule of each setting, for its flag and for the text a checkpoint stores when the run is
// resumed: a hand-edited file cannot get past what the command line refuses. The upper bounds
// stop values that could only exhaust memory or time: a batch of 4096 sentences of 12 words at
// d-model 4096 already needs 800 MB per activation; the toy's vocabulary is at most 200 words.
CLI::Validator rule(const std::string& setting) {
  if (setting == "steps" || setting == "warmup") return integer_in(1, 10'000'000);
  if (setting == "lr") return positive_number();
  if (setting == "batch-size" || setting == "d-model") return integer_in(1, 4096);
  if (setting == "vocab") return integer_in(4, 200);
  if (setting == "synonyms") return integer_in(2, 1000);
  if (setting == "seed") return unsigned_integer();
  if (setting == "threads") return integer_in(1, 256);
  if (setting == "sparse") return zero_or_one();
  throw std::logic_error("toy_training: no rule for the setting " + setting);
}

void add_flags(CLI::App& app, Settings& s) {
  app.add_option("--steps", s.steps, "training steps in all (a resumed run continues up to it)")
      ->capture_default_str()->check(rule("steps"));
  app.add_option("--lr", s.lr, "base learning rate: step k uses lr * noam(k, d_model, 1, warmup)")
      ->capture_default_str()->check(rule("lr"));
  app.add_option("--warmup", s.warmup, "Noam warmup steps: the rate rises until then, then decays")
      ->capture_default_str()->check(rule("warmup"));
  app.add_option("--batch-size", s.batch_size, "sentences per training batch")
      ->capture_default_str()->check(rule("batch-size"));
  app.add_option("--d-model", s.d_model, "width of the embeddings and of the positional encoding")
      ->capture_default_str()->check(rule("d-model"));
  app.add_option("--vocab", s.vocab, "vocabulary size, the padding id 0 included (a toy: at most 200)")
      ->capture_default_str()->check(rule("vocab"));
  app.add_option("--synonyms", s.synonyms, "words per meaning (synonym group)")
      ->capture_default_str()->check(rule("synonyms"));
  app.add_option("--seed", s.seed, "seed of the data, the initial weights and the dropout masks")
      ->capture_default_str()->check(rule("seed"));
  app.add_option("--threads", s.threads, "threads of tapegrad's kernels (1: this model is too small to gain from more)")
      ->capture_default_str()->check(rule("threads"));
  app.add_flag("--sparse", s.sparse, "row-sparse embedding gradient: SparseAdam for it, Adam for the rest");
  app.add_option("--out", s.out, "folder for the pictures, their data and the checkpoint")->capture_default_str();
  app.add_option("--checkpoint", s.checkpoint, "where to save the trained model and optimizer state "
                                               "(default: <out>/checkpoint.safetensors)");
  app.add_option("--resume", s.resume, "continue the run saved in this checkpoint (its settings are used)");
}

// Checks that need more than one flag; each flag has passed its rule.
void check_settings(const Settings& s) {
  if (s.vocab - 1 < s.synonyms + 1)
    throw CLI::ValidationError("--vocab", "expected at least two meanings, i.e. vocab >= synonyms + 2 = " +
                                              std::to_string(s.synonyms + 2) + ", got " + std::to_string(s.vocab));
}

// ---- the optimizers ----------------------------------------------------------------------------

// The tutorials' optimizer: Adam(lr, betas (0.9, 0.98), eps 1e-9), its rate set at every step by
// LambdaLR to lr * noam(step) = lr * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).
// With --sparse the embedding's gradient is row-sparse, which Adam refuses (its moments would
// decay on every row): SparseAdam updates only the rows a batch used, and Adam trains the rest.
struct Optimizers {
  std::unique_ptr<optim::Adam> adam;
  std::unique_ptr<optim::LambdaLR> adam_schedule;
  std::unique_ptr<optim::SparseAdam> sparse_adam;     // --sparse only
  std::unique_ptr<optim::LambdaLR> sparse_schedule;

  Optimizers(ToyModel& model, const Settings& s) {
    const auto noam = [d_model = s.d_model, warmup = s.warmup](std::int64_t step) {
      return optim::noam(step, d_model, 1.0, warmup);
    };
    std::vector<Parameter> dense;
    for (const auto& [name, p] : model.named_parameters())
      if (!(s.sparse && p.is_same(model.embed->lut->weight))) dense.push_back(p);
    adam = std::make_unique<optim::Adam>(dense, optim::AdamOptions(s.lr).betas({0.9, 0.98}).eps(1e-9));
    adam_schedule = std::make_unique<optim::LambdaLR>(*adam, noam);
    if (s.sparse) {
      sparse_adam = std::make_unique<optim::SparseAdam>(std::vector<Parameter>{model.embed->lut->weight},
                                                        optim::SparseAdamOptions(s.lr).betas({0.9, 0.98}).eps(1e-9));
      sparse_schedule = std::make_unique<optim::LambdaLR>(*sparse_adam, noam);
    }
  }
  // The tutorials' order: opt.step(); opt.zero_grad(); sched.step();
  void step() {
    adam->step();
    adam->zero_grad();
    adam_schedule->step();
    if (sparse_adam) {
      sparse_adam->step();
      sparse_adam->zero_grad();
      sparse_schedule->step();
    }
  }
  double lr() const { return adam->lr(0); }
};

// ---- one training step -------------------------------------------------------------------------

// Forward, the loss over the words (pad positions have target kIgnore and count for nothing),
// backward (the tape replays the forward newest-first), then the optimizer. Returns the loss.
double train_step(ToyModel& model, nn::CrossEntropyLoss& criterion, const Batch& batch, Optimizers& opt) {
  const Tensor logits = model.forward(batch.ids);                 // (B*T, tags)
  const Tensor loss = criterion.forward(logits, flat(batch.targets));
  loss.backward();
  opt.step();
  return loss.item();
}

// ---- the training loop ------------------------------------------------------------------------

// Trains from run.first_step up to --steps, appending to run's loss history. The batch of step k
// depends only on the seed and k, so a resumed run sees the batches an unbroken run sees.
void train(ToyModel& model, Optimizers& opt, const Settings& s, const Language& lang, const Corpus& corpus,
           const std::vector<Batch>& held_out, RunRecord& run) {
  nn::CrossEntropyLoss criterion;          // ignore_index -100 = kIgnore; the mean over the words
  const std::int64_t eval_every = std::max<std::int64_t>(1, s.steps / 50);
  if (run.first_step == 0) run.loss.held_out.push_back({0, evaluate(model, held_out).loss});
  Progress progress(run.first_step, s.steps);
  std::int64_t tokens = 0;
  for (std::int64_t step = run.first_step; step < s.steps; ++step) {
    const Batch batch = training_batch(lang, corpus, std::size_t(s.batch_size), s.seed, step);
    const Array embedding_before = model.embed->lut->weight.data();
    const double lr = opt.lr();
    run.loss.train.push_back(train_step(model, criterion, batch, opt));
    run.unused_rows.record(batch, embedding_before, model.embed->lut->weight.data());
    tokens += batch.tokens;
    if ((step + 1) % eval_every == 0 || step + 1 == s.steps)   // evaluating draws no random number
      run.loss.held_out.push_back({step + 1, evaluate(model, held_out).loss});
    progress.update(step + 1, run.loss.train.back(), tokens, lr);
  }
  run.seconds = progress.seconds();
}

// ---- checkpoints -------------------------------------------------------------------------------

// Everything an exact resume needs goes into ONE safetensors file: tapegrad's TrainingCheckpoint
// saves the model, the optimizers with their schedules, the generator of the dropout masks and the
// step; this program adds its settings and the loss history as "extra" text, so that a resumed
// run is the same run and its report and loss curve cover all of it.
io::TrainingCheckpoint tracked_state(ToyModel& model, Optimizers& opt, std::shared_ptr<Generator> generator) {
  io::TrainingCheckpoint state(model, *opt.adam, opt.adam_schedule.get());
  if (opt.sparse_adam) state.add_optimizer(*opt.sparse_adam, opt.sparse_schedule.get());
  state.add_generator("model", std::move(generator));
  return state;
}

std::string exact(double v) {
  std::ostringstream os;
  os.precision(17);                        // enough digits to read back the same double
  os << v;
  return os.str();
}

std::map<std::string, std::string> settings_text(const Settings& s) {
  return {{"seed", std::to_string(s.seed)},         {"vocab", std::to_string(s.vocab)},
          {"synonyms", std::to_string(s.synonyms)}, {"d-model", std::to_string(s.d_model)},
          {"batch-size", std::to_string(s.batch_size)}, {"lr", exact(s.lr)},
          {"warmup", std::to_string(s.warmup)},     {"sparse", s.sparse ? "1" : "0"}};
}

void save_checkpoint(const io::TrainingCheckpoint& state, const Settings& s, const LossHistory& loss) {
  std::map<std::string, std::string> extra = settings_text(s);
  std::string train, held_out;
  for (const double l : loss.train) train += exact(l) + " ";
  for (const auto& [step, l] : loss.held_out) held_out += std::to_string(step) + ":" + exact(l) + " ";
  extra["loss"] = train;
  extra["held-out-loss"] = held_out;
  fs::create_directories(fs::absolute(s.checkpoint).parent_path());
  state.save(s.checkpoint, io::TrainingProgress(s.steps, s.steps, extra));
}

// Reads --resume's file, checking all of it, and takes the run's settings from it: a resumed run
// continues the same run. Each stored setting passes the rule of its flag, and the settings
// together pass check_settings, as if they had been given on the command line. A flag given with
// another value is an error, not a silent change.
io::SafetensorsFile read_resume_file(Settings& s, const std::set<std::string>& given) {
  io::SafetensorsFile file;
  try {
    file = io::load_safetensors(s.resume);   // reads and checks the whole file before anything else
  } catch (const CheckpointError& e) {
    throw std::runtime_error(std::string("--resume: ") + e.what());
  }
  const std::string where = "--resume '" + s.resume + "'";
  auto adopt = [&](const std::string& flag, auto& setting) {
    const std::optional<std::string> saved = file.metadata_value("progress.extra." + flag);
    if (!saved)
      throw std::runtime_error(where + ": expected a toy_training checkpoint, got a file without the setting --" + flag);
    std::string text = *saved;
    if (const std::string why = rule(flag)(text); !why.empty())
      throw std::runtime_error(where + ": the checkpoint's setting --" + flag + " is refused: " + why);
    std::remove_reference_t<decltype(setting)> value{};
    CLI::detail::lexical_cast(text, value);   // cannot fail: the rule accepted the text
    if (given.count("--" + flag) && value != setting)
      throw std::runtime_error("--" + flag + " " + settings_text(s).at(flag) + ": the checkpoint's run used " +
                               *saved + "; leave the flag out to continue that run");
    setting = value;
  };
  adopt("seed", s.seed), adopt("vocab", s.vocab), adopt("synonyms", s.synonyms), adopt("d-model", s.d_model);
  adopt("batch-size", s.batch_size), adopt("lr", s.lr), adopt("warmup", s.warmup), adopt("sparse", s.sparse);
  try {
    check_settings(s);
  } catch (const CLI::ValidationError& e) {
    throw std::runtime_error(where + ": the checkpoint's settings are refused: " + e.what());
  }
  return file;
}

// A number as the checkpoint stores a loss: strtod's whole text, or nullopt. "inf" and "nan" read
// back too (a loss can overflow while the weights are still finite); a run whose optimizer
// moments went NaN is refused by the checkpoint's own value checks.
std::optional<double> stored_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// Restores the tracked state from the file (all or nothing) and the loss history; returns the step.
std::int64_t resume(io::TrainingCheckpoint& state, io::SafetensorsFile file, const Settings& s, RunRecord& run) {
  const std::string where = "--resume '" + s.resume + "'";
  io::TrainingProgress progress;
  try {
    progress = state.restore(std::move(file), s.resume);   // all or nothing
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--resume: ") + e.what());
  }
  if (progress.step < 1)
    throw std::runtime_error(where + ": expected the number of steps the run took (at least 1), got " +
                             std::to_string(progress.step));
  if (progress.step >= s.steps)
    throw std::runtime_error(where + ": the run is at step " + std::to_string(progress.step) +
                             " already; ask for more with --steps");
  std::istringstream train(progress.extra.count("loss") ? progress.extra.at("loss") : "");
  for (std::string l; train >> l;) {
    const auto loss = stored_number(l);
    if (!loss)
      throw std::runtime_error(where + ": expected the loss of step " + std::to_string(run.loss.train.size() + 1) +
                               " as a number, got '" + l + "'");
    run.loss.train.push_back(*loss);
  }
  std::istringstream held_out(progress.extra.count("held-out-loss") ? progress.extra.at("held-out-loss") : "");
  for (std::string item; held_out >> item;) {
    const std::size_t colon = item.find(':');
    std::int64_t step = -1;
    const auto loss = colon == std::string::npos ? std::nullopt : stored_number(item.substr(colon + 1));
    if (!loss || !parse_integer(item.substr(0, colon), step) || step < 0 || step > progress.step)
      throw std::runtime_error(where + ": expected held-out losses as step:loss with a step in [0, " +
                               std::to_string(progress.step) + "], got '" + item + "'");
    run.loss.held_out.push_back({step, *loss});
  }
  if (std::int64_t(run.loss.train.size()) != progress.step || run.loss.held_out.empty())
    throw std::runtime_error(where + ": expected the loss of each of its " + std::to_string(progress.step) +
                             " steps, got " + std::to_string(run.loss.train.size()));
  return progress.step;
}

// ---- main --------------------------------------------------------------------------------------

void describe(const Settings& s, const Language& lang, const ToyModel& model, std::int64_t first_step) {
  std::cout << "toy_training: tag each word with its meaning and its role (open: the first "
            << kOpeningLength << " words; rest)\n"
            << "  vocabulary: <pad> and " << s.vocab - 1 << " words, " << lang.groups() << " meanings of up to "
            << s.synonyms << " synonyms (" << lang.word(1) << " .. " << lang.word(std::min(s.synonyms, s.vocab - 1))
            << " mean the same); " << lang.num_tags() << " tags\n"
            << "  data: " << kTrainSentences << " training and " << kHeldOutSentences << " held-out sentences of "
            << kMinLength << " to " << kMaxLength << " words\n"
            << "  training: " << s.steps << " steps of " << s.batch_size << " sentences, "
            << (s.sparse ? "SparseAdam (embedding) + Adam" : "Adam") << ", lr " << s.lr << " * noam(step, "
            << s.d_model << ", 1, " << s.warmup << "), seed " << s.seed << "\n";
  if (first_step > 0) std::cout << "  resumed from " << s.resume << " at step " << first_step << "\n";
  std::cout << model << "\n";
}

int run(Settings s, const std::set<std::string>& given) {
  set_num_threads(s.threads);   // tapegrad's pool; results do not depend on it
  std::optional<io::SafetensorsFile> saved;
  if (!s.resume.empty()) saved = read_resume_file(s, given);
  const Language lang(s.vocab, s.synonyms);
  const Corpus corpus = make_corpus(lang, kTrainSentences, kHeldOutSentences, s.seed);
  const std::vector<Batch> held_out = held_out_batches(lang, corpus, 64);

  const auto generator = std::make_shared<Generator>(s.seed);   // initial weights, then dropout masks
  const ModelOptions options{s.vocab, s.d_model, lang.num_tags(), /*dropout=*/0.1, /*max_len=*/64, s.sparse};
  ToyModel model(options, generator);
  Optimizers opt(model, s);
  // Step 0, as built from the seed (a resumed run's model was built the same way).
  RunRecord run;
  run.seed = s.seed;
  run.embedding_at_start = model.embed->lut->weight.data();
  run.pe_fingerprint_at_start = model.pos->fingerprint();
  io::TrainingCheckpoint state = tracked_state(model, opt, generator);
  if (saved) run.first_step = resume(state, std::move(*saved), s, run);

  describe(s, lang, model, run.first_step);
  train(model, opt, s, lang, corpus, held_out, run);
  std::cout << "trained " << s.steps - run.first_step << " steps in " << duration(run.seconds) << '\n';
  save_checkpoint(state, s, run.loss);

  const int status = report_what_changed(model, options, lang, held_out, run, s.checkpoint);

  fs::create_directories(s.out);
  write_picture_data(s.out, lang, model.pos->pe.data(), run.loss, similarity_matrix(run.embedding_at_start),
                     similarity_matrix(model.embed->lut->weight.data()));
  std::cout << draw_pictures(s.out) << '\n';
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Trains the tutorials' Embeddings -> PositionalEncoding -> Linear on a toy language and shows, "
               "with measured facts, that the embeddings learn while the positional encoding stays fixed. "
               "Exit status: 0 if every claim holds, 1 if one does not, 2 for an error.");
  Settings settings;
  add_flags(app, settings);
  try {
    app.parse(argc, argv);
    check_settings(settings);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (settings.checkpoint.empty()) settings.checkpoint = settings.out + "/checkpoint.safetensors";
  std::set<std::string> given;             // the flags on the command line, for --resume
  for (const CLI::Option* option : app.get_options())
    if (option->count() > 0) given.insert(option->get_name());
  try {
    return run(settings, given);
  } catch (const std::exception& e) {
    std::cerr << "toy_training: " << e.what() << '\n';
    return 2;
  }
}
