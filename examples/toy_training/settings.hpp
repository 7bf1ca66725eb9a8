// examples/toy_training/settings.hpp: toy_training's settings and their flags. Settings holds
// what the flags set, with the defaults; rule() is each setting's check, used for its flag and
// again for the settings a checkpoint stores when a run is resumed; add_flags() has the help text.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "flag_checks.hpp"

namespace toy {

/// What the flags set, with their defaults (add_flags has the help text of each).
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
  std::string checkpoint;  // default: <out>/checkpoint.safetensors
  std::string resume;
};

// The rule of each setting, for its flag and for the text a checkpoint stores when the run is
// resumed: a hand-edited file cannot get past what the command line refuses. The upper bounds
// stop values that could only exhaust memory or time: a batch of 4096 sentences of 12 words at
// d-model 4096 already needs 800 MB per activation; the toy's vocabulary is at most 200 words.
inline CLI::Validator rule(const std::string& setting) {
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

inline void add_flags(CLI::App& app, Settings& s) {
  app.add_option("--steps", s.steps, "training steps in all (a resumed run continues up to it)")
      ->capture_default_str()
      ->check(rule("steps"));
  app.add_option("--lr", s.lr, "base learning rate: step k uses lr * noam(k, d_model, 1, warmup)")
      ->capture_default_str()
      ->check(rule("lr"));
  app.add_option("--warmup", s.warmup, "Noam warmup steps: the rate rises until then, then decays")
      ->capture_default_str()
      ->check(rule("warmup"));
  app.add_option("--batch-size", s.batch_size, "sentences per training batch")
      ->capture_default_str()
      ->check(rule("batch-size"));
  app.add_option("--d-model", s.d_model, "width of the embeddings and of the positional encoding")
      ->capture_default_str()
      ->check(rule("d-model"));
  app.add_option("--vocab", s.vocab,
                 "vocabulary size, the padding id 0 included (a toy: at most 200)")
      ->capture_default_str()
      ->check(rule("vocab"));
  app.add_option("--synonyms", s.synonyms, "words per meaning (synonym group)")
      ->capture_default_str()
      ->check(rule("synonyms"));
  app.add_option("--seed", s.seed, "seed of the data, the initial weights and the dropout masks")
      ->capture_default_str()
      ->check(rule("seed"));
  app.add_option("--threads", s.threads,
                 "threads of tapegrad's kernels (1: this model is too small to gain from more)")
      ->capture_default_str()
      ->check(rule("threads"));
  app.add_flag("--sparse", s.sparse,
               "row-sparse embedding gradient: SparseAdam for it, Adam for the rest");
  app.add_option("--out", s.out, "folder for the pictures, their data and the checkpoint")
      ->capture_default_str();
  app.add_option("--checkpoint", s.checkpoint,
                 "where to save the trained model and optimizer state (default: "
                 "<out>/checkpoint.safetensors)");
  app.add_option("--resume", s.resume,
                 "continue the run saved in this checkpoint (its settings are used)");
}

// Checks that need more than one flag; each flag has passed its rule.
inline void check_settings(const Settings& s) {
  if (s.vocab - 1 < s.synonyms + 1)
    throw CLI::ValidationError(
        "--vocab", "expected at least two meanings, i.e. vocab >= synonyms + 2 = " +
                       std::to_string(s.synonyms + 2) + ", got " + std::to_string(s.vocab));
}

}  // namespace toy
