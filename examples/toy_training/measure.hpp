// examples/toy_training/measure.hpp: the measurements behind the report. Each function computes
// one fact from the model, the weights or the data; none of them trains, records on the tape or
// draws a random number (so measuring never changes what a resumed run would do). At the end, what
// the training loop records for the report: LossHistory, UnusedRows and RunRecord.
//
// Embedding rows are compared without the sqrt(d_model) scale: it multiplies every row by the same
// number, which changes no cosine similarity.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "language.hpp"
#include "model.hpp"

namespace toy {

using tapegrad::Array;

/// Bit-for-bit equality: the same shape and the same bytes (not merely ==, which calls 0 == -0).
inline bool same_bits(const Array& a, const Array& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
inline bool same_bits_row(const Array& a, const Array& b, std::size_t row) {
  const std::size_t D = a.shape()[1];
  return std::memcmp(a.data() + row * D, b.data() + row * D, D * sizeof(float)) == 0;
}

/// The targets (B, T) as the (B*T) vector the cross-entropy takes, matching the logits' rows.
inline tapegrad::IndexArray flat(const tapegrad::IndexArray& targets) {
  tapegrad::IndexArray t = targets;
  t.reshape({targets.size()});
  return t;
}

/// cos(a, b) = a.b / (|a| |b|) between rows a and b of an embedding table, in double.
inline double cosine(const Array& table, std::size_t a, std::size_t b) {
  const std::size_t D = table.shape()[1];
  double dot = 0, aa = 0, bb = 0;
  for (std::size_t j = 0; j < D; ++j) {
    const double x = table(a, j), y = table(b, j);
    dot += x * y, aa += x * x, bb += y * y;
  }
  return aa > 0 && bb > 0 ? dot / std::sqrt(aa * bb) : 0.0;
}

/// The words' cosine similarities, (vocab-1) x (vocab-1), word ids 1.. in order (no padding row).
inline std::vector<std::vector<double>> similarity_matrix(const Array& table) {
  const std::size_t n = table.shape()[0] - 1;
  std::vector<std::vector<double>> m(n, std::vector<double>(n));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) m[a][b] = cosine(table, a + 1, b + 1);
  return m;
}

struct PairSimilarity {
  double synonyms = 0, others = 0;  // mean cosine over pairs of distinct words
};
inline PairSimilarity mean_similarity(const Language& lang, const Array& table) {
  double syn = 0, other = 0;
  std::int64_t n_syn = 0, n_other = 0;
  for (std::int64_t a = 1; a < lang.vocab(); ++a)
    for (std::int64_t b = a + 1; b < lang.vocab(); ++b) {
      const double c = cosine(table, std::size_t(a), std::size_t(b));
      if (lang.synonyms(a, b))
        syn += c, ++n_syn;
      else
        other += c, ++n_other;
    }
  return {n_syn ? syn / double(n_syn) : 0.0, n_other ? other / double(n_other) : 0.0};
}

/// |after[id] - before[id]| for every row, the padding row included.
inline std::vector<double> row_distances(const Array& before, const Array& after) {
  const std::size_t rows = before.shape()[0], D = before.shape()[1];
  std::vector<double> d(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::size_t j = 0; j < D; ++j)
      s += double(after(r, j) - before(r, j)) * double(after(r, j) - before(r, j));
    d[r] = std::sqrt(s);
  }
  return d;
}

/// True iff every value of row `row` is +0.0f (all 32 bits zero; -0.0f does not count).
inline bool row_is_plus_zero(const Array& table, std::size_t row) {
  const std::size_t D = table.shape()[1];
  const float* p = table.data() + row * D;
  return std::all_of(p, p + D, [](float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return u == 0;
  });
}

/// How the model does on the held-out sentences, in eval mode: the mean loss per word and the
/// share of words whose highest logit is the right tag.
struct Evaluation {
  double loss = 0, accuracy = 0;
  std::int64_t correct = 0, words = 0;
};
inline Evaluation evaluate(ToyModel& model, const std::vector<Batch>& batches) {
  const bool was_training = model.is_training();
  model.eval();                             // Dropout becomes the identity
  tapegrad::autograd::NoGradGuard no_grad;  // nothing to backpropagate: record nothing
  tapegrad::nn::CrossEntropyLoss summed(tapegrad::nn::CrossEntropyLossOptions().reduction("sum"));
  Evaluation e;
  for (const Batch& b : batches) {
    const Tensor logits = model.forward(b.ids);
    const tapegrad::IndexArray targets = flat(b.targets);
    e.loss += summed.forward(logits, targets).item();
    const tapegrad::IndexArray guess = tapegrad::ops::argmax(logits, 1);
    for (std::size_t i = 0; i < targets.size(); ++i)
      if (targets(i) != kIgnore) e.correct += guess(i) == targets(i), ++e.words;
  }
  e.loss /= double(e.words);
  e.accuracy = double(e.correct) / double(e.words);
  model.train(was_training);
  return e;
}

/// The best accuracy ANY tagger could reach on these batches if it saw only the word (by_word)
/// or only the position: for each word (position), count its most frequent tag. A model above
/// both ceilings must be using the word and its position together.
struct Ceilings {
  double word_only = 0, position_only = 0;
};
inline Ceilings ceilings(const Language& lang, const std::vector<Batch>& batches) {
  using Counts = std::vector<std::vector<std::int64_t>>;  // [word or position][tag]
  const std::vector<std::int64_t> no_tags(std::size_t(lang.num_tags()), 0);
  Counts by_word(std::size_t(lang.vocab()), no_tags), by_position(std::size_t(kMaxLength), no_tags);
  std::int64_t words = 0;
  for (const Batch& b : batches)
    for (std::size_t i = 0; i < b.ids.shape()[0]; ++i)
      for (std::size_t t = 0; t < b.ids.shape()[1]; ++t) {
        if (b.targets(i, t) == kIgnore) continue;
        ++by_word[std::size_t(b.ids(i, t))][std::size_t(b.targets(i, t))];
        ++by_position[t][std::size_t(b.targets(i, t))];
        ++words;
      }
  auto best = [&](const Counts& counts) {
    std::int64_t right = 0;
    for (const auto& c : counts) right += *std::max_element(c.begin(), c.end());
    return double(right) / double(words);
  };
  return {best(by_word), best(by_position)};
}

/// One number for all the trained weights (FNV-1a over each parameter in order): two runs that
/// end with the same fingerprint ended with the same weights, bit for bit.
inline std::uint64_t weights_fingerprint(const tapegrad::nn::Module& model) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [name, p] : model.named_parameters())
    h = (h ^ tapegrad::fingerprint(p.data())) * 0x100000001b3ull;
  return h;
}

/// The loss curve: the training loss at each step, the held-out loss now and then.
struct LossHistory {
  std::vector<double> train;                              // train[k]: the loss of step k + 1
  std::vector<std::pair<std::int64_t, double>> held_out;  // (steps done, held-out loss)
};

/// Rows of the embedding that a step's batch did not use: do they stay put? Under Adam they do
/// not: their gradient is zero, not absent, so Adam still updates them, and the momentum left from
/// earlier steps keeps moving them. Under SparseAdam they must, bit for bit: it updates only the
/// rows present in the gradient, their moments included
/// (https://docs.pytorch.org/docs/stable/generated/torch.optim.SparseAdam.html).
struct UnusedRows {
  std::int64_t unused = 0, moved = 0;  // (step, word) pairs: unused by the batch, and moved anyway

  void record(const Batch& batch, const Array& before, const Array& after) {
    std::vector<bool> used(before.shape()[0], false);
    for (const std::int64_t id : batch.ids) used[std::size_t(id)] = true;
    for (std::size_t row = 1; row < used.size(); ++row)
      if (!used[row]) ++unused, moved += !same_bits_row(before, after, row);
  }
};

/// What the report compares the trained model with: the model at step 0, and the run's record.
struct RunRecord {
  std::uint64_t seed = 0;
  Array embedding_at_start;                   // lut.weight at step 0
  std::uint64_t pe_fingerprint_at_start = 0;  // of the table the constructor computed
  LossHistory loss;             // every step of the run, those before a resume included
  UnusedRows unused_rows;       // the steps this process ran
  std::int64_t first_step = 0;  // where this process started (> 0 when resumed)
  double seconds = 0;           // how long this process trained
};

}  // namespace toy
