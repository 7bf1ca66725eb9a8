// src/transformer/generate.cpp: sampling text from any CausalLM, with and without its cache.
//
// Without the cache, every new token re-runs the model on the whole context (what nanoGPT's
// generate() does): model.last_logits(context). With it, the model keeps what it computed for the
// positions already seen, and each new token is ONE call model.forward_cached(token), which costs
// one position. Neither path records on the tape (NoGradGuard): generation has no backward.
//
// The context window: positions are absolute (a learned or sinusoidal table, or the rotary
// tables, indexed 0 .. block_size-1), so a cache cannot slide one position at a time. When the
// context is full, it restarts from its last block_size / 2 tokens, whose keys and values are
// computed once more; the uncached path applies the same rule, so the two sample the same tokens.
//
// Sampling (nanoGPT's): logits / temperature; with top_k, logits below the k-th largest become
// -inf; softmax (in double); then one uniform draw u per row picks the first id whose cumulative
// probability exceeds u.
#include "tapegrad/transformer/generate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/shape.hpp"

namespace tapegrad::nn::transformer {

Array CausalLM::last_logits(const IndexArray& idx) {
  const Tensor logits = forward(idx);  // (B, T, V)
  const std::size_t B = logits.shape()[0], T = logits.shape()[1], V = logits.shape()[2];
  Array out = Array::from_shape({B, V});
  for (std::size_t b = 0; b < B; ++b)
    std::copy_n(logits.data().data() + (b * T + T - 1) * V, V, out.data() + b * V);
  return out;
}

void CausalLM::recompute(bool on) {
  check<ValueError>(!on, context(), ".recompute: expected a model whose blocks run under "
                    "autograd::checkpoint (GPT, LlamaForCausalLM), got one that does not implement "
                    "recompute(bool); call autograd::checkpoint in its forward instead");
}

namespace {
void check_options(const std::string& where, const GenerateOptions& o) {
  check<ValueError>(o.max_new_tokens() >= 0, where, ": expected max_new_tokens >= 0, got ",
                    o.max_new_tokens());
  check<ValueError>(o.temperature() > 0.0 && std::isfinite(o.temperature()), where,
                    ": expected a temperature > 0, got ", o.temperature());
  check<ValueError>(!o.top_k() || *o.top_k() >= 1, where, ": expected top_k >= 1, got ",
                    o.top_k().value_or(0));
}

// One id from a row of logits, as nanoGPT samples it.
std::int64_t sample(const float* logits, std::size_t V, const GenerateOptions& o, Generator& gen) {
  std::vector<float> l(V);
  const auto temperature = static_cast<float>(o.temperature());
  for (std::size_t j = 0; j < V; ++j) l[j] = logits[j] / temperature;
  if (o.top_k() && static_cast<std::size_t>(*o.top_k()) < V) {
    std::vector<float> sorted = l;
    const std::size_t k = static_cast<std::size_t>(*o.top_k());
    std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(k - 1), sorted.end(),
                     std::greater<float>());
    const float threshold = sorted[k - 1];  // the k-th largest; ties with it are kept
    for (float& x : l)
      if (x < threshold) x = -std::numeric_limits<float>::infinity();
  }
  const float m = *std::max_element(l.begin(), l.end());
  std::vector<double> p(V);
  double sum = 0.0;
  for (std::size_t j = 0; j < V; ++j) sum += p[j] = std::exp(double(l[j]) - double(m));
  const double u = gen.uniform_double() * sum;
  double cumulative = 0.0;
  std::size_t last = 0;
  for (std::size_t j = 0; j < V; ++j) {
    if (p[j] == 0.0) continue;
    cumulative += p[j];
    last = j;
    if (cumulative > u) return static_cast<std::int64_t>(j);
  }
  return static_cast<std::int64_t>(last);  // u within rounding of the total
}

// Columns [from, to) of every batch row of ids (B, T), as a (B, to - from) array.
IndexArray columns(const IndexArray& ids, std::size_t from, std::size_t to) {
  const std::size_t B = ids.shape()[0];
  IndexArray out = IndexArray::from_shape({B, to - from});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = from; t < to; ++t) out(b, t - from) = ids(b, t);
  return out;
}
}  // namespace

IndexArray generate(CausalLM& model, const IndexArray& idx, const GenerateOptions& options,
                    Generator& gen) {
  const std::string where = model.context() + ".generate";
  check<ShapeError>(idx.dimension() == 2 && idx.shape()[1] >= 1, where,
                    ": expected a prompt idx of shape (B, t) with t >= 1, got ", idx.shape());
  check_options(where, options);
  const std::int64_t V = model.vocab_size(), block_size = model.block_size();
  check<ValueError>(V >= 1 && block_size >= 1, where,
                    ": expected a model with vocab_size >= 1 and block_size >= 1, got ", V, " and ",
                    block_size);
  for (std::size_t p = 0; p < idx.size(); ++p)
    check<IndexError>(0 <= idx.data()[p] && idx.data()[p] < V, "index out of range in self | ",
                      where, ": expected ids in [0, ", V, "), got ", idx.data()[p], " at position ",
                      position_str(p, idx.shape()));

  autograd::NoGradGuard no_grad;
  struct Restore {  // the caller's mode and an empty cache, even after an exception
    CausalLM& model;
    bool training;
    ~Restore() {
      model.train(training);
      model.reset_cache();
    }
  } restore{model, model.is_training()};
  model.eval();
  model.reset_cache();

  const std::size_t B = idx.shape()[0], t = idx.shape()[1], block = std::size_t(block_size);
  const std::size_t total = t + std::size_t(options.max_new_tokens()),
                    keep = std::max<std::size_t>(1, block / 2);
  IndexArray seq = IndexArray::from_shape({B, total});
  for (std::size_t b = 0; b < B; ++b) std::copy_n(idx.data() + b * t, t, seq.data() + b * total);
  std::size_t len = t, start = t > block ? t - block : 0;  // the context is seq[:, start:len]
  std::size_t cache_start = std::size_t(-1);               // where the cache's position 0 is in seq
  const bool use_cache = options.use_cache() && model.supports_cache();
  for (; len < total; ++len) {
    if (len - start > block) start = len - keep;  // full: restart from the last block / 2
    Array logits;
    if (!use_cache) {
      logits = model.last_logits(columns(seq, start, len));
    } else if (cache_start != start) {  // (re)fill the cache with the whole context
      model.reset_cache();
      cache_start = start;
      logits = model.forward_cached(columns(seq, start, len));
    } else {  // one new position
      logits = model.forward_cached(columns(seq, len - 1, len));
    }
    check<ShapeError>(
        logits.dimension() == 2 && logits.shape()[0] == B && logits.shape()[1] == std::size_t(V),
        where, ": expected the model's logits of shape (B, vocab_size) = (", B, ", ", V, "), got ",
        logits.shape());
    // A logit that overflowed (weights of 1e38, say) would make every probability NaN and the
    // draw meaningless: refused, as torch.multinomial refuses "probability tensor contains either
    // inf, nan or element < 0".
    for (std::size_t j = 0; j < logits.size(); ++j)
      check<ValueError>(std::isfinite(logits.data()[j]), where,
                        ": expected finite logits from the model, got ", logits.data()[j],
                        " for token ", j % std::size_t(V), " of batch row ", j / std::size_t(V),
                        " after ", len - t,
                        " generated tokens: the model's weights or activations overflow float32 "
                        "(check the checkpoint's values)");
    for (std::size_t b = 0; b < B; ++b)
      seq(b, len) = sample(logits.data() + b * std::size_t(V), std::size_t(V), options, gen);
  }
  return seq;
}

}  // namespace tapegrad::nn::transformer
