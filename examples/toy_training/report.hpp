// examples/toy_training/report.hpp: the report toy_training prints after training. Every line is
// a measured fact; the lines marked "ok" or "FAILED" are claims, checked by the program, and the
// program exits non-zero unless all of them hold. The claims: the loss falls, the model beats what
// the word alone or the position alone allows, synonyms grow alike, every word's row moves and the
// padding row stays zero, pe is bit-for-bit unchanged and is a buffer, eval mode is deterministic,
// a saved model loads into a freshly built one exactly, and (--sparse) SparseAdam leaves unused
// rows alone.
#pragma once

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "language.hpp"
#include "measure.hpp"
#include "model.hpp"
#include "progress.hpp"

namespace toy {

/// Sections, then lines. claim() is a fact with a condition the program checks.
class Report {
 public:
  void section(const std::string& title) { std::cout << '\n' << title << '\n'; }
  void claim(bool holds, const std::string& text) {
    ++claims_;
    failures_ += !holds;
    std::cout << (holds ? "  ok      " : "  FAILED  ") << text << '\n';
  }
  void fact(const std::string& text) { std::cout << "          " << text << '\n'; }
  int claims() const { return claims_; }
  int failures() const { return failures_; }

 private:
  int claims_ = 0, failures_ = 0;
};

inline void report_learning(Report& r, ToyModel& model, const Language& lang,
                            const std::vector<Batch>& held_out, const RunRecord& run) {
  r.section("The model learned the task");
  const std::vector<double>& loss = run.loss.train;
  const std::size_t last_n = std::min<std::size_t>(10, loss.size());
  double last = 0;
  for (std::size_t k = loss.size() - last_n; k < loss.size(); ++k) last += loss[k] / double(last_n);
  r.claim(last < 0.5 * loss.front(),
          "training loss fell from " + fixed(loss.front()) + " (step 1) to " + fixed(last) +
              " (mean of the last " + std::to_string(last_n) +
              " steps): " + percent(last / loss.front()) + " of the start (claim: below 50 %)");
  const Evaluation eval = evaluate(model, held_out);
  r.fact("held-out loss: " + fixed(run.loss.held_out.front().second) + " before training, " +
         fixed(eval.loss) + " after");
  const double chance = 1.0 / double(lang.num_tags());
  r.claim(eval.accuracy > chance,
          "held-out accuracy " + percent(eval.accuracy) + " (" + std::to_string(eval.correct) +
              " of " + std::to_string(eval.words) + " words); guessing: " + percent(chance) +
              " (1 of " + std::to_string(lang.num_tags()) + " tags)");
  const Ceilings ceiling = ceilings(lang, held_out);
  r.claim(eval.accuracy > ceiling.word_only && eval.accuracy > ceiling.position_only,
          "it uses the word AND its position: the best possible knowing only the word is " +
              percent(ceiling.word_only) + ", only the position " + percent(ceiling.position_only));
}

inline void report_embeddings(Report& r, ToyModel& model, const Language& lang,
                              const RunRecord& run) {
  r.section("The embeddings learned");
  const Array& embedding = model.embed->lut->weight.data();
  const PairSimilarity sim0 = mean_similarity(lang, run.embedding_at_start),
                       sim1 = mean_similarity(lang, embedding);
  r.claim(sim1.synonyms - sim1.others >= 0.2,
          "synonyms grew alike: their mean cosine similarity went " + fixed(sim0.synonyms, 2) +
              " -> " + fixed(sim1.synonyms, 2) + ", other pairs' " + fixed(sim0.others, 2) +
              " -> " + fixed(sim1.others, 2) + " (claim: 0.2 apart)");
  const std::vector<double> moved = row_distances(run.embedding_at_start, embedding);
  std::size_t least = 1, most = 1;
  for (std::size_t id = 1; id < moved.size(); ++id) {
    if (moved[id] < moved[least]) least = id;
    if (moved[id] > moved[most]) most = id;
  }
  r.claim(moved[least] > 0, "every word's row moved: by " + fixed(moved[least], 2) + " (" +
                                lang.word(std::int64_t(least)) + ", the least) to " +
                                fixed(moved[most], 2) + " (" + lang.word(std::int64_t(most)) +
                                "); a row started with length about " +
                                fixed(std::sqrt(double(embedding.shape()[1])), 1));
  r.claim(row_is_plus_zero(embedding, kPad),
          "the padding row is still exactly zero: all " + std::to_string(embedding.shape()[1]) +
              " values have bits 0x00000000 (padding_idx: no gradient, ever)");
  const UnusedRows& unused = run.unused_rows;
  if (model.embed->lut->options().sparse())
    r.claim(unused.moved == 0,
            "SparseAdam left alone, bit for bit, every row a step's batch did not use (" +
                std::to_string(unused.unused) + " times)");
  else
    r.fact("Adam moved a row its step's batch did not use " + std::to_string(unused.moved) +
           " of " + std::to_string(unused.unused) +
           " times (momentum); --sparse: SparseAdam would not");
}

inline void report_positional_encoding(Report& r, ToyModel& model, const RunRecord& run) {
  r.section("The positional encoding did not change");
  const tapegrad::Buffer& pe = model.pos->pe;
  r.claim(pe.fingerprint() == run.pe_fingerprint_at_start,
          "pe's fingerprint is " + hex(pe.fingerprint()) + " after training, " +
              hex(run.pe_fingerprint_at_start) + " before (FNV-1a of its " +
              std::to_string(pe.numel()) + " float32 values)");
  bool verified = true;
  try {
    model.pos->verify();  // recomputes the table in double, compares bit for bit
  } catch (const tapegrad::InvariantError& e) {
    verified = false;
    r.fact(e.what());
  }
  r.claim(verified,
          "pos->verify(): recomputing the sines and cosines gives the stored table, bit for bit");
  bool buffer = false, parameter = false;
  std::string parameters;
  for (const auto& [name, b] : model.named_buffers()) buffer |= name == "pos.pe" && b.is_same(pe);
  for (const auto& [name, p] : model.named_parameters()) {
    parameter |= p.is_same(pe) || name == "pos.pe";
    parameters += (parameters.empty() ? "" : ", ") + name;
  }
  r.claim(buffer && !parameter && !pe.has_grad(),
          "pos.pe " + tapegrad::str(pe.shape()) +
              " is a buffer with no gradient, not a parameter (those are " + parameters + ")");
}

// Eval mode, and the checkpoint: the saved file rebuilds the model exactly.
inline void report_eval_and_checkpoint(Report& r, ToyModel& model, const ModelOptions& options,
                                       const std::vector<Batch>& held_out, const RunRecord& run,
                                       const std::string& checkpoint) {
  r.section("Eval mode and the checkpoint");
  const tapegrad::IndexArray& ids = held_out.front().ids;
  model.eval();
  {
    tapegrad::autograd::NoGradGuard no_grad;
    r.claim(
        same_bits(model.forward(ids).data(), model.forward(ids).data()),
        "eval mode is deterministic: two forwards on the same held-out batch agree bit for bit");
    const Tensor x = model.embed->forward(ids);
    Array expected = x.data();
    const Array& pe = model.pos->pe.data();
    for (std::size_t b = 0; b < expected.shape()[0]; ++b)
      for (std::size_t t = 0; t < expected.shape()[1]; ++t)
        for (std::size_t j = 0; j < expected.shape()[2]; ++j) expected(b, t, j) += pe(0, t, j);
    r.claim(same_bits(model.pos->forward(x).data(), expected),
            "in eval mode Dropout is the identity: pos(x) is exactly x + pe[:, :T]");
  }
  const auto& mask = model.pos->dropout->last_mask();
  std::int64_t zeroed = 0;
  for (const std::uint8_t keep : mask) zeroed += keep == 0;
  r.fact("in training mode it zeroed " +
         percent(double(zeroed) / double(std::max<std::size_t>(mask.size(), 1))) +
         " of the values in the last step (p = " + fixed(options.dropout, 1) +
         "), a new random choice each step");

  ToyModel fresh(options, std::make_shared<tapegrad::Generator>(run.seed + 1));
  fresh.eval();
  tapegrad::autograd::NoGradGuard no_grad;
  const Array expected = model.forward(ids).data();
  const bool differed = !same_bits(fresh.forward(ids).data(), expected);
  tapegrad::io::load(fresh, checkpoint);  // the file's "model." tensors, strict
  r.claim(differed && same_bits(fresh.forward(ids).data(), expected),
          "saved to " + checkpoint + "; a fresh model (seed " + std::to_string(run.seed + 1) +
              ") loaded from it gives the same eval outputs, bit for bit");
  model.train();
}

/// Prints the report and returns the program's exit status: 0 if every claim holds, else 1.
inline int report_what_changed(ToyModel& model, const ModelOptions& options, const Language& lang,
                               const std::vector<Batch>& held_out, const RunRecord& run,
                               const std::string& checkpoint) {
  Report r;
  report_learning(r, model, lang, held_out, run);
  report_embeddings(r, model, lang, run);
  report_positional_encoding(r, model, run);
  report_eval_and_checkpoint(r, model, options, held_out, run, checkpoint);
  std::cout << '\n';
  if (r.failures() == 0)
    std::cout << "All " << r.claims() << " claims hold.\n";
  else
    std::cout << r.failures() << " of " << r.claims() << " claims FAILED.\n";
  std::cout << "The trained weights' fingerprint: " << hex(weights_fingerprint(model))
            << " (a run resumed from a checkpoint ends with the same)\n";
  return r.failures() == 0 ? 0 : 1;
}

}  // namespace toy
