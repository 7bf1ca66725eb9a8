// src/nn/transformer/gpt_generate.cpp: sampling text from a GPT, with and without a cache of keys
// and values.
//
// Without the cache, every new token re-runs the model on the whole context (what nanoGPT's
// generate() does). With it, each block keeps the keys and values of the positions already seen,
// (B, block_size, C) per block, so a new token costs ONE position: its own embedding, LayerNorms,
// projections and MLP (matrix-vector work), and one query against the cached keys. Neither path
// records on the tape (NoGradGuard): generation has no backward.
//
// The context window: positions are absolute (a learned or sinusoidal table indexed 0 ..
// block_size-1), so a cache cannot slide one position at a time. When the context is full, it
// restarts from its last block_size / 2 tokens, whose keys and values are computed once more; the
// uncached path applies the same rule, so the two sample the same tokens.
//
// Sampling (nanoGPT's): logits / temperature; with top_k, logits below the k-th largest become
// -inf; softmax (in double); then one uniform draw u per row picks the first id whose cumulative
// probability exceeds u.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/nn/transformer/gpt.hpp"
#include "tapegrad/ops/elementwise.hpp"

namespace tapegrad::nn::transformer {

struct GPT::KVCache {
  std::vector<Array> k, v;  // per block: (B, block_size, C)
  std::size_t length = 0;   // positions held
};

namespace {
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

// Rows [from, to) of every batch row of ids (B, T), as a (B, to - from) array.
IndexArray columns(const IndexArray& ids, std::size_t from, std::size_t to) {
  const std::size_t B = ids.shape()[0];
  IndexArray out = IndexArray::from_shape({B, to - from});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = from; t < to; ++t) out(b, t - from) = ids(b, t);
  return out;
}

// The last position of x (B, n, C) as (B, C).
Tensor last_position(const Tensor& x) {
  const std::size_t B = x.shape()[0], n = x.shape()[1], C = x.shape()[2];
  Array out = Array::from_shape({B, C});
  for (std::size_t b = 0; b < B; ++b)
    std::copy_n(x.data().data() + (b * n + n - 1) * C, C, out.data() + b * C);
  return Tensor(std::move(out));
}

// Attention of n new positions (absolute L .. L+n-1) over the cache, for qkv (B, n, 3C) whose keys
// and values have already been written into the cache at rows L .. L+n-1. Position L+i attends to
// cached rows 0 .. L+i: s_j = (q . k_j) * scale, softmax (sum in double), out = sum_j p_j v_j.
Array cached_attention(const Array& qkv, const Array& K, const Array& V, std::size_t L,
                       std::size_t H) {
  const std::size_t B = qkv.shape()[0], n = qkv.shape()[1], C = qkv.shape()[2] / 3, hs = C / H;
  const std::size_t rows = K.shape()[1];
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hs)));
  Array out = Array::from_shape({B, n, C});
  std::vector<float> s(L + n);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t h = 0; h < H; ++h) {
        const float* q = qkv.data() + (b * n + i) * 3 * C + h * hs;
        const std::size_t keys = L + i + 1;
        float m = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < keys; ++j) {
          const float* k = K.data() + (b * rows + j) * C + h * hs;
          float dot = 0.0f;
          for (std::size_t d = 0; d < hs; ++d) dot += q[d] * k[d];
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        double sum = 0.0;
        for (std::size_t j = 0; j < keys; ++j) sum += s[j] = std::exp(s[j] - m);
        const auto total = static_cast<float>(sum);
        float* o = out.data() + (b * n + i) * C + h * hs;
        std::fill_n(o, hs, 0.0f);
        for (std::size_t j = 0; j < keys; ++j) {
          const float p = s[j] / total;
          const float* v = V.data() + (b * rows + j) * C + h * hs;
          for (std::size_t d = 0; d < hs; ++d) o[d] += p * v[d];
        }
      }
  return out;
}
}  // namespace

Array GPT::cached_logits(const IndexArray& tokens, KVCache& cache) {
  const std::size_t B = tokens.shape()[0], n = tokens.shape()[1], C = std::size_t(config_.n_embd());
  const std::size_t rows = std::size_t(config_.block_size()), L = cache.length;
  if (cache.k.empty())
    for (std::size_t l = 0; l < transformer->h->size(); ++l) {
      cache.k.push_back(Array::from_shape({B, rows, C}));
      cache.v.push_back(Array::from_shape({B, rows, C}));
    }
  // The embedding of positions L .. L+n-1, as embed() computes it for a whole window.
  Array x0 = Array::from_shape({B, n, C});
  const bool learned = transformer->wte != nullptr;
  const float* table = token_embedding().data().data();
  const float* positions =
      learned ? transformer->wpe->weight.data().data() : transformer->wpe_table->pe.data().data();
  const float scale = learned ? 1.0f : transformer->wte_scaled->scale();
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i) {
      const float* tok = table + std::size_t(tokens(b, i)) * C;
      const float* pos = positions + (L + i) * C;
      float* out = x0.data() + (b * n + i) * C;
      for (std::size_t c = 0; c < C; ++c)
        out[c] = learned ? tok[c] + pos[c] : tok[c] * scale + pos[c];
    }
  Tensor x(std::move(x0));
  for (std::size_t l = 0; l < transformer->h->size(); ++l) {
    Block& block = static_cast<Block&>((*transformer->h)[std::int64_t(l)]);
    const Tensor qkv = block.attn->c_attn->forward(block.ln_1->forward(x));  // (B, n, 3C)
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < n; ++i) {
        const float* row = qkv.data().data() + (b * n + i) * 3 * C;
        std::copy_n(row + C, C, cache.k[l].data() + (b * rows + L + i) * C);
        std::copy_n(row + 2 * C, C, cache.v[l].data() + (b * rows + L + i) * C);
      }
    const Tensor y(
        cached_attention(qkv.data(), cache.k[l], cache.v[l], L, std::size_t(config_.n_head())));
    x = x + block.attn->c_proj->forward(y);
    x = x + block.mlp->forward(block.ln_2->forward(x));
  }
  cache.length = L + n;
  return lm_head->forward(transformer->ln_f->forward(last_position(x))).data();
}

Array GPT::uncached_logits(const IndexArray& window) {
  return lm_head->forward(last_position(features(window)))
      .data();  // the head on the last position only
}

IndexArray GPT::generate(const IndexArray& idx, const GenerateOptions& options, Generator& gen) {
  const std::string where = context() + ".generate";
  check<ShapeError>(idx.dimension() == 2 && idx.shape()[1] >= 1, where,
                    ": expected a prompt idx of shape (B, t) with t >= 1, got ", idx.shape());
  check<ValueError>(options.max_new_tokens() >= 0, where, ": expected max_new_tokens >= 0, got ",
                    options.max_new_tokens());
  check<ValueError>(options.temperature() > 0.0 && std::isfinite(options.temperature()), where,
                    ": expected a temperature > 0, got ", options.temperature());
  check<ValueError>(!options.top_k() || *options.top_k() >= 1, where, ": expected top_k >= 1, got ",
                    options.top_k().value_or(0));
  const std::int64_t V = config_.vocab_size();
  for (std::size_t p = 0; p < idx.size(); ++p)
    check<IndexError>(0 <= idx.data()[p] && idx.data()[p] < V, "index out of range in self | ",
                      where, ": expected ids in [0, ", V, "), got ", idx.data()[p], " at position ",
                      position_str(p, idx.shape()));

  autograd::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  struct Restore {  // the caller's mode, even after an exception
    GPT& model;
    bool training;
    ~Restore() { model.train(training); }
  } restore{*this, was_training};

  const std::size_t B = idx.shape()[0], t = idx.shape()[1],
                    block = std::size_t(config_.block_size());
  const std::size_t total = t + std::size_t(options.max_new_tokens()),
                    keep = std::max<std::size_t>(1, block / 2);
  IndexArray seq = IndexArray::from_shape({B, total});
  for (std::size_t b = 0; b < B; ++b) std::copy_n(idx.data() + b * t, t, seq.data() + b * total);
  std::size_t len = t, start = t > block ? t - block : 0;  // the context is seq[:, start:len]
  KVCache cache;
  std::size_t cache_start = std::size_t(-1);  // where the cache's position 0 is in seq
  for (; len < total; ++len) {
    if (len - start > block) start = len - keep;  // full: restart from the last block / 2
    Array logits;
    if (!options.use_cache()) {
      logits = uncached_logits(columns(seq, start, len));
    } else if (cache_start != start) {  // (re)fill the cache with the whole context
      cache = KVCache{};
      cache_start = start;
      logits = cached_logits(columns(seq, start, len), cache);
    } else {  // one new position
      logits = cached_logits(columns(seq, len - 1, len), cache);
    }
    for (std::size_t b = 0; b < B; ++b)
      seq(b, len) = sample(logits.data() + b * std::size_t(V), std::size_t(V), options, gen);
  }
  return seq;
}

}  // namespace tapegrad::nn::transformer
