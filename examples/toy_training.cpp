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
// Read it top to bottom: the model, the optimizers, one training step and the training loop come
// first; then what a checkpoint saves, and run(), which puts it all together (data, model,
// training, checkpoint, report, pictures) for main(). The plumbing is in examples/toy_training/:
// the settings and their flags (settings.hpp), saving and resuming (checkpoint.hpp), the toy
// language, the model's class, the measurements, the report, the progress line and the pictures.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"
#include "toy_training/checkpoint.hpp"
#include "toy_training/language.hpp"
#include "toy_training/measure.hpp"
#include "toy_training/model.hpp"
#include "toy_training/pictures.hpp"
#include "toy_training/progress.hpp"
#include "toy_training/report.hpp"
#include "toy_training/settings.hpp"

using namespace tapegrad;
using namespace toy;

namespace {

constexpr std::size_t kTrainSentences = 2000, kHeldOutSentences = 500;

// ---- the model ---------------------------------------------------------------------------------

// The tutorials' pipeline, class ToyModel in toy_training/model.hpp (tape_of_a_training_step.cpp
// builds a small one too):
//
//     ids (B, T) -> embed: Embeddings, lut(ids) * sqrt(d_model), padding_idx 0  -> (B, T, d_model)
//                -> pos:   PositionalEncoding, x + pe[:, :T], then Dropout(0.1) -> (B, T, d_model)
//                -> out:   Linear(d_model, tags)                                -> (B, T, tags)
//                -> reshaped to logits (B*T, tags) for the cross-entropy
//
// Its state: embed.lut.weight, pos.pe (a buffer, never trained), out.weight, out.bias. Every
// random draw, the initial weights and then the dropout masks, comes from one seeded generator.
ModelOptions model_options(const Settings& s, const Language& lang) {
  return {s.vocab, s.d_model, lang.num_tags(), /*dropout=*/0.1, /*max_len=*/64, s.sparse};
}

// ---- the optimizers ----------------------------------------------------------------------------

// The tutorials' optimizer: Adam(lr, betas (0.9, 0.98), eps 1e-9), its rate set at every step by
// LambdaLR to lr * noam(step) = lr * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).
// With --sparse the embedding's gradient is row-sparse, which Adam refuses (its moments would
// decay on every row): SparseAdam updates only the rows a batch used, and Adam trains the rest.
struct Optimizers {
  std::unique_ptr<optim::Adam> adam;
  std::unique_ptr<optim::LambdaLR> adam_schedule;
  std::unique_ptr<optim::SparseAdam> sparse_adam;  // --sparse only
  std::unique_ptr<optim::LambdaLR> sparse_schedule;

  Optimizers(ToyModel& model, const Settings& s) {
    const auto noam = [d_model = s.d_model, warmup = s.warmup](std::int64_t step) {
      return optim::noam(step, d_model, 1.0, warmup);
    };
    std::vector<Parameter> dense;
    for (const auto& [name, p] : model.named_parameters())
      if (!(s.sparse && p.is_same(model.embed->lut->weight))) dense.push_back(p);
    adam =
        std::make_unique<optim::Adam>(dense, optim::AdamOptions(s.lr).betas({0.9, 0.98}).eps(1e-9));
    adam_schedule = std::make_unique<optim::LambdaLR>(*adam, noam);
    if (s.sparse) {
      sparse_adam = std::make_unique<optim::SparseAdam>(
          std::vector<Parameter>{model.embed->lut->weight},
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
double train_step(ToyModel& model, nn::CrossEntropyLoss& criterion, const Batch& batch,
                  Optimizers& opt) {
  const Tensor logits = model.forward(batch.ids);  // (B*T, tags)
  const Tensor loss = criterion.forward(logits, flat(batch.targets));
  loss.backward();
  opt.step();
  return loss.item();
}

// ---- the training loop ------------------------------------------------------------------------

// Trains from run.first_step up to --steps, appending to run's loss history. The batch of step k
// depends only on the seed and k, so a resumed run sees the batches an unbroken run sees.
void train(ToyModel& model, Optimizers& opt, const Settings& s, const Language& lang,
           const Corpus& corpus, const std::vector<Batch>& held_out, RunRecord& run) {
  nn::CrossEntropyLoss criterion;  // ignore_index -100 = kIgnore; the mean over the words
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
    if ((step + 1) % eval_every == 0 || step + 1 == s.steps)  // evaluating draws no random number
      run.loss.held_out.push_back({step + 1, evaluate(model, held_out).loss});
    progress.update(step + 1, run.loss.train.back(), tokens, lr);
  }
  run.seconds = progress.seconds();
}

// ---- the checkpoint ----------------------------------------------------------------------------

// What a checkpoint saves for an exact resume: the model, the optimizers with their schedules and
// the generator of the dropout masks (with the step, the settings and the loss history, which
// save_checkpoint adds: toy_training/checkpoint.hpp).
io::TrainingCheckpoint tracked_state(ToyModel& model, Optimizers& opt,
                                     std::shared_ptr<Generator> generator) {
  io::TrainingCheckpoint state(model, *opt.adam, opt.adam_schedule.get());
  if (opt.sparse_adam) state.add_optimizer(*opt.sparse_adam, opt.sparse_schedule.get());
  state.add_generator("model", std::move(generator));
  return state;
}

// ---- the run -----------------------------------------------------------------------------------

void describe(const Settings& s, const Language& lang, const ToyModel& model,
              std::int64_t first_step) {
  std::cout << "toy_training: tag each word with its meaning and its role (open: the first "
            << kOpeningLength << " words; rest)\n"
            << "  vocabulary: <pad> and " << s.vocab - 1 << " words, " << lang.groups()
            << " meanings of up to " << s.synonyms << " synonyms (" << lang.word(1) << " .. "
            << lang.word(std::min(s.synonyms, s.vocab - 1)) << " mean the same); "
            << lang.num_tags() << " tags\n"
            << "  data: " << kTrainSentences << " training and " << kHeldOutSentences
            << " held-out sentences of " << kMinLength << " to " << kMaxLength << " words\n"
            << "  training: " << s.steps << " steps of " << s.batch_size << " sentences, "
            << (s.sparse ? "SparseAdam (embedding) + Adam" : "Adam") << ", lr " << s.lr
            << " * noam(step, " << s.d_model << ", 1, " << s.warmup << "), seed " << s.seed << "\n";
  if (first_step > 0)
    std::cout << "  resumed from " << s.resume << " at step " << first_step << "\n";
  std::cout << model << "\n";
}

int run(Settings s, const std::set<std::string>& given) {
  tapegrad::keep_freed_memory(true);  // a training process reuses its freed buffers (memory.hpp)
  set_num_threads(s.threads);  // tapegrad's pool; results do not depend on it
  std::optional<io::SafetensorsFile> saved;
  if (!s.resume.empty()) saved = read_resume_file(s, given);
  const Language lang(s.vocab, s.synonyms);
  const Corpus corpus = make_corpus(lang, kTrainSentences, kHeldOutSentences, s.seed);
  const std::vector<Batch> held_out = held_out_batches(lang, corpus, 64);

  const auto generator =
      std::make_shared<Generator>(s.seed);  // initial weights, then dropout masks
  const ModelOptions options = model_options(s, lang);
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
  std::cout << "trained " << s.steps - run.first_step << " steps in " << duration(run.seconds)
            << '\n';
  save_checkpoint(state, s, run.loss);

  const int status = report_what_changed(model, options, lang, held_out, run, s.checkpoint);

  fs::create_directories(s.out);
  const Array& pe = model.pos->pe.data();
  write_picture_data(s.out, lang, pe, run.loss, similarity_matrix(run.embedding_at_start),
                     similarity_matrix(model.embed->lut->weight.data()));
  std::cout << draw_pictures(s.out, lang, std::int64_t(pe.shape()[1]), std::int64_t(pe.shape()[2]))
            << '\n';
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("toy_training", [&] {
    CLI::App app(
        "Trains the tutorials' Embeddings -> PositionalEncoding -> Linear on a toy language and "
        "shows, with measured facts, that the embeddings learn while the positional encoding "
        "stays fixed. Exit status: 0 if every claim holds, 1 if one does not, 2 for an error.");
    Settings settings;
    add_flags(app, settings);
    examples::parse_flags(app, argc, argv);
    check_settings(settings);
    if (settings.checkpoint.empty()) settings.checkpoint = settings.out + "/checkpoint.safetensors";
    std::set<std::string> given;  // the flags on the command line, for --resume
    for (const CLI::Option* option : app.get_options())
      if (option->count() > 0) given.insert(option->get_name());
    return run(settings, given);
  });
}
