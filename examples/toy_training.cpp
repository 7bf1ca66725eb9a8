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
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "toy_training/language.hpp"
#include "toy_training/measure.hpp"
#include "toy_training/model.hpp"
#include "toy_training/pictures.hpp"
#include "toy_training/report.hpp"

// OpenBLAS's thread count. tapegrad links OpenBLAS; the declaration is OpenBLAS's cblas.h's,
// repeated here because only src/ops/matmul.cpp includes cblas.
extern "C" void openblas_set_num_threads(int num_threads);

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

// CLI11 checks, with messages that say what was expected: "--steps: expected an integer in
// [1, 10000000], got 'abc'". (CLI11 then converts the text, which cannot fail any more.)
template <class Int>
bool parse_integer(const std::string& text, Int& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}
CLI::Validator integer_in(std::int64_t low, std::int64_t high) {
  const std::string range = "[" + std::to_string(low) + ", " + std::to_string(high) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::int64_t v = 0;
        return parse_integer(text, v) && v >= low && v <= high ? "" : "expected an integer in " + range + ", got '" + text + "'";
      },
      "INT in " + range);
}
CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        return parse_integer(text, v) ? "" : "expected an integer in [0, 2^64), got '" + text + "'";
      },
      "UINT");
}
CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        return CLI::detail::lexical_cast(text, v) && v > 0 && std::isfinite(v) ? "" : "expected a number > 0, got '" + text + "'";
      },
      "> 0");
}

void add_flags(CLI::App& app, Settings& s) {
  app.add_option("--steps", s.steps, "training steps in all (a resumed run continues up to it)")
      ->capture_default_str()->check(integer_in(1, 10'000'000));
  app.add_option("--lr", s.lr, "base learning rate: step k uses lr * noam(k, d_model, 1, warmup)")
      ->capture_default_str()->check(positive_number());
  app.add_option("--warmup", s.warmup, "Noam warmup steps: the rate rises until then, then decays")
      ->capture_default_str()->check(integer_in(1, 10'000'000));
  app.add_option("--batch-size", s.batch_size, "sentences per training batch")
      ->capture_default_str()->check(integer_in(1, 4096));
  app.add_option("--d-model", s.d_model, "width of the embeddings and of the positional encoding")
      ->capture_default_str()->check(integer_in(1, 4096));
  app.add_option("--vocab", s.vocab, "vocabulary size, the padding id 0 included")
      ->capture_default_str()->check(integer_in(4, 100'000));
  app.add_option("--synonyms", s.synonyms, "words per meaning (synonym group)")
      ->capture_default_str()->check(integer_in(2, 1000));
  app.add_option("--seed", s.seed, "seed of the data, the initial weights and the dropout masks")
      ->capture_default_str()->check(unsigned_integer());
  app.add_option("--threads", s.threads, "OpenBLAS threads (1: this model is too small to gain from more)")
      ->capture_default_str()->check(integer_in(1, 256));
  app.add_flag("--sparse", s.sparse, "row-sparse embedding gradient: SparseAdam for it, Adam for the rest");
  app.add_option("--out", s.out, "folder for the pictures, their data and the checkpoint")->capture_default_str();
  app.add_option("--checkpoint", s.checkpoint, "where to save the trained model and optimizer state "
                                               "(default: <out>/checkpoint.safetensors)");
  app.add_option("--resume", s.resume, "continue the run saved in this checkpoint (its settings are used)");
}

// Checks that need more than one flag; CLI11 has checked each flag on its own.
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
      sparse_adam = std::make_unique<optim::SparseAdam>(
          std::vector<Parameter>{model.embed->lut->weight}, optim::SparseAdamOptions(s.lr).betas({0.9, 0.98}).eps(1e-9));
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

// Rows of the embedding that a step's batch did not use: do they stay put? Under Adam they do
// not — its momentum keeps moving a row after its gradient is zero (pytorch/pytorch#18404);
// under SparseAdam they must, bit for bit (SPEC 2.14, assertion 8).
struct UnusedRows {
  std::int64_t unused = 0, moved = 0;   // (step, word) pairs: unused by the batch, and moved anyway

  void record(const Batch& batch, const Array& before, const Array& after) {
    std::vector<bool> used(before.shape()[0], false);
    for (const std::int64_t id : batch.ids) used[std::size_t(id)] = true;
    for (std::size_t row = 1; row < used.size(); ++row)
      if (!used[row]) ++unused, moved += !same_bits_row(before, after, row);
  }
};

// ---- the run -----------------------------------------------------------------------------------

struct Run {
  LossHistory history;
  UnusedRows unused_rows;
  double seconds = 0;
  std::int64_t first_step = 0;
};

Run train(ToyModel& model, Optimizers& opt, const Settings& s, const Language& lang, const Corpus& corpus,
          const std::vector<Batch>& held_out, Run run) {
  nn::CrossEntropyLoss criterion;          // ignore_index -100 = kIgnore, mean over the words
  const std::int64_t eval_every = std::max<std::int64_t>(1, s.steps / 50);
  if (run.first_step == 0) run.history.held_out.push_back({0, evaluate(model, held_out).loss});
  Progress progress(run.first_step, s.steps);
  std::int64_t tokens = 0;
  for (std::int64_t step = run.first_step; step < s.steps; ++step) {
    const Batch batch = training_batch(lang, corpus, std::size_t(s.batch_size), s.seed, step);
    const Array embedding_before = model.embed->lut->weight.data();
    const double lr = opt.lr();
    run.history.train.push_back(train_step(model, criterion, batch, opt));
    run.unused_rows.record(batch, embedding_before, model.embed->lut->weight.data());
    tokens += batch.tokens;
    if ((step + 1) % eval_every == 0 || step + 1 == s.steps)
      run.history.held_out.push_back({step + 1, evaluate(model, held_out).loss});
    progress.update(step + 1, run.history.train.back(), tokens, lr);
  }
  run.seconds = progress.seconds();
  return run;
}

// ---- the report --------------------------------------------------------------------------------

// What the model looked like before training: the facts the report compares with.
struct Before {
  Array embedding;                 // lut.weight at step 0
  std::uint64_t pe_fingerprint;    // of the table the constructor computed
};

int report(ToyModel& model, const Settings& s, const Language& lang, const std::vector<Batch>& held_out,
           const Before& before, const Run& run) {
  Report r;
  const Array& embedding = model.embed->lut->weight.data();
  const std::vector<double>& loss = run.history.train;

  r.section("The model learned the task");
  const std::size_t last_n = std::min<std::size_t>(10, loss.size());
  double last = 0;
  for (std::size_t k = loss.size() - last_n; k < loss.size(); ++k) last += loss[k] / double(last_n);
  r.claim(last < 0.5 * loss.front(),
          "training loss fell from " + fixed(loss.front()) + " (step 1) to " + fixed(last) + " (mean of the last " +
              std::to_string(last_n) + " steps): " + percent(last / loss.front()) + " of the start (claim: below 50 %)");
  const Evaluation eval = evaluate(model, held_out);
  r.fact("held-out loss: " + fixed(run.history.held_out.front().second) + " before training, " + fixed(eval.loss) +
         " after");
  const Ceilings ceiling = ceilings(lang, held_out);
  r.claim(eval.accuracy > 1.0 / double(lang.num_tags()),
          "held-out accuracy " + percent(eval.accuracy) + " (" + std::to_string(eval.correct) + " of " +
              std::to_string(eval.words) + " words); guessing: " + percent(1.0 / double(lang.num_tags())) +
              " (1 of " + std::to_string(lang.num_tags()) + " tags)");
  r.claim(eval.accuracy > ceiling.word_only && eval.accuracy > ceiling.position_only,
          "it uses the word AND its position: knowing only the word, the best possible is " +
              percent(ceiling.word_only) + "; knowing only the position, " + percent(ceiling.position_only));

  r.section("The embeddings learned");
  const PairSimilarity sim0 = mean_similarity(lang, before.embedding), sim1 = mean_similarity(lang, embedding);
  r.claim(sim1.synonyms - sim1.others >= 0.2,
          "synonyms grew alike: their mean cosine similarity went " + fixed(sim0.synonyms, 2) + " -> " +
              fixed(sim1.synonyms, 2) + ", other pairs' " + fixed(sim0.others, 2) + " -> " + fixed(sim1.others, 2) +
              " (claim: 0.2 apart)");
  const std::vector<double> moved = row_distances(before.embedding, embedding);
  std::int64_t least = 1, most = 1;
  for (std::int64_t id = 1; id < lang.vocab(); ++id) {
    if (moved[std::size_t(id)] < moved[std::size_t(least)]) least = id;
    if (moved[std::size_t(id)] > moved[std::size_t(most)]) most = id;
  }
  r.claim(moved[std::size_t(least)] > 0,
          "every word's row moved: by " + fixed(moved[std::size_t(least)], 2) + " (" + lang.word(least) + ", the least) to " +
              fixed(moved[std::size_t(most)], 2) + " (" + lang.word(most) + "); a row started with length about " +
              fixed(std::sqrt(double(s.d_model)), 1));
  r.claim(row_is_plus_zero(embedding, kPad),
          "the padding row is still exactly zero: its " + std::to_string(s.d_model) +
              " values all have bits 0x00000000 (padding_idx: it never gets a gradient)");
  if (s.sparse)
    r.claim(run.unused_rows.moved == 0,
            "SparseAdam left alone, bit for bit, every row a step's batch did not use (" +
                std::to_string(run.unused_rows.unused) + " times)");
  else
    r.fact("Adam moved a row its step's batch did not use " + std::to_string(run.unused_rows.moved) + " of " +
           std::to_string(run.unused_rows.unused) + " times (momentum); --sparse: SparseAdam would not");

  r.section("The positional encoding did not change");
  const Buffer& pe = model.pos->pe;
  r.claim(pe.fingerprint() == before.pe_fingerprint,
          "pe's fingerprint is " + hex(pe.fingerprint()) + " after training, " + hex(before.pe_fingerprint) +
              " before (FNV-1a of its " + std::to_string(pe.numel()) + " float32 values)");
  bool verified = true;
  try {
    model.pos->verify();
  } catch (const InvariantError& e) {
    verified = false;
    r.fact(e.what());
  }
  r.claim(verified, "pos->verify(): recomputing the sines and cosines gives the stored table, bit for bit");
  bool buffer = false, parameter = false;
  std::string parameter_names;
  for (const auto& [name, b] : model.named_buffers()) buffer |= name == "pos.pe" && b.is_same(pe);
  for (const auto& [name, p] : model.named_parameters()) {
    parameter |= p.is_same(pe) || name == "pos.pe";
    parameter_names += (parameter_names.empty() ? "" : ", ") + name;
  }
  r.claim(buffer && !parameter && !pe.has_grad(),
          "pos.pe " + str(pe.shape()) + " is a buffer, without a gradient, and not one of the parameters: " +
              parameter_names);

  r.section("Eval mode");
  model.eval();
  {
    autograd::NoGradGuard no_grad;
    const IndexArray& ids = held_out.front().ids;
    r.claim(same_bits(model.forward(ids).data(), model.forward(ids).data()),
            "eval mode is deterministic: two forwards on the same held-out batch agree bit for bit");
    const Tensor x = model.embed->forward(ids);
    Array expected = x.data();
    const std::size_t B = ids.shape()[0], T = ids.shape()[1], D = std::size_t(s.d_model);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t j = 0; j < D; ++j) expected(b, t, j) += pe.data()(0, t, j);
    r.claim(same_bits(model.pos->forward(x).data(), expected),
            "in eval mode Dropout is the identity: pos(x) is exactly x + pe[:, :T]");
  }
  model.train();
  const auto& mask = model.pos->dropout->last_mask();
  std::int64_t dropped = 0;
  for (const std::uint8_t keep : mask) dropped += keep == 0;
  r.fact("in training mode it zeroed " + percent(double(dropped) / double(std::max<std::size_t>(mask.size(), 1))) +
         " of the values in the last step (p = 0.1), a new random choice each step");

  std::cout << '\n';
  if (r.failures() == 0) std::cout << "All " << r.claims() << " claims hold.\n";
  else std::cout << r.failures() << " of " << r.claims() << " claims FAILED.\n";
  std::cout << "The trained weights' fingerprint: " << hex(weights_fingerprint(model))
            << " (a run resumed from a checkpoint ends with the same)\n";
  return r.failures() == 0 ? 0 : 1;
}

// ---- main --------------------------------------------------------------------------------------

int run(Settings s) {
  openblas_set_num_threads(s.threads);
  const Language lang(s.vocab, s.synonyms);
  const Corpus corpus = make_corpus(lang, kTrainSentences, kHeldOutSentences, s.seed);
  const std::vector<Batch> held_out = held_out_batches(lang, corpus, 64);

  const auto generator = std::make_shared<Generator>(s.seed);   // initial weights, then dropout masks
  ToyModel model(ModelOptions{s.vocab, s.d_model, lang.num_tags(), 0.1, 64, s.sparse}, generator);
  Optimizers opt(model, s);
  const Before before{model.embed->lut->weight.data(), model.pos->fingerprint()};

  std::cout << "toy_training: tag each word with its meaning and its role (open: the first "
            << kOpeningLength << " words; rest)\n"
            << "  vocabulary: <pad> and " << s.vocab - 1 << " words, " << lang.groups() << " meanings of up to "
            << s.synonyms << " synonyms (" << lang.word(1) << " .. " << lang.word(std::min(s.synonyms, s.vocab - 1))
            << " mean the same); " << lang.num_tags() << " tags\n"
            << "  data: " << kTrainSentences << " training and " << kHeldOutSentences << " held-out sentences of "
            << kMinLength << " to " << kMaxLength << " words\n"
            << "  training: " << s.steps << " steps of " << s.batch_size << " sentences, "
            << (s.sparse ? "SparseAdam (embedding) + Adam" : "Adam") << ", lr " << s.lr << " * noam(step, "
            << s.d_model << ", 1, " << s.warmup << "), seed " << s.seed << "\n"
            << model << "\n";

  Run result = train(model, opt, s, lang, corpus, held_out, Run{});
  std::cout << "trained " << s.steps - result.first_step << " steps in " << duration(result.seconds) << '\n';

  const int status = report(model, s, lang, held_out, before, result);

  std::filesystem::create_directories(s.out);
  write_picture_data(s.out, lang, model.pos->pe.data(), result.history, similarity_matrix(before.embedding),
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
  try {
    return run(settings);
  } catch (const std::exception& e) {
    std::cerr << "toy_training: " << e.what() << '\n';
    return 2;
  }
}
