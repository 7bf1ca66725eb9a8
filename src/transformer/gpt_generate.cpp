// src/transformer/gpt_generate.cpp: the GPT as a CausalLM, its forward pass with a cache of keys
// and values for the sampler (generate.cpp), and the built-in attention's cache.
//
// Each block's attention keeps the keys and values of the positions already seen, (B, block_size,
// C), so a new token costs ONE position: its own embedding, norms, projections and MLP
// (matrix-vector work), and one query against the cached keys. With position "rope" the new
// queries and keys are turned at their absolute positions L .. L+n-1 (L: the cache's length)
// before the keys are cached, which is what the uncached forward does to the same positions. Nothing
// records on the tape (NoGradGuard), and dropout is off, as in eval mode.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/transformer/gpt.hpp"
#include "tapegrad/ops/elementwise.hpp"

namespace tapegrad::nn::transformer {

struct GPT::KVCache {     // what the blocks' attentions hold, (B, block_size, C) each
  std::size_t batch = 0;   // B
  std::size_t length = 0;  // positions held
};

GPT::~GPT() = default;

void GPT::reset_cache() {
  cache_.reset();
  for (const auto& block : *transformer->h) static_cast<Block&>(*block).attn->reset_cache();
}

bool GPT::supports_cache() const {
  for (const auto& block : *transformer->h)
    if (!static_cast<const Block&>(*block).attn->supports_cache()) return false;
  return true;
}

namespace {
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

void CausalSelfAttention::reset_cache() {
  cached_k_ = Array();
  cached_v_ = Array();
  cached_ = 0;
}

// x (B, n, C) at positions L .. L+n-1 (L = cached_): their keys and values are written into the
// cache at rows L .. L+n-1, then each new query attends to rows 0 .. its own position.
Tensor CausalSelfAttention::forward_cached(const Tensor& x) {
  autograd::NoGradGuard no_grad;
  const std::size_t B = x.shape()[0], n = x.shape()[1], C = x.shape()[2], L = cached_;
  check<ShapeError>(L + n <= block_size_, context(), ".forward_cached: expected positions up to ",
                    block_size_, ", got ", L, " cached + ", n, " new");
  if (L == 0) {
    cached_k_ = Array::from_shape({B, block_size_, C});
    cached_v_ = Array::from_shape({B, block_size_, C});
  }
  check<ShapeError>(cached_k_.shape()[0] == B, context(),
                    ".forward_cached: expected a batch of the cache's size ", cached_k_.shape()[0],
                    ", got ", x.shape());
  Tensor qkv = c_attn->forward(x);  // (B, n, 3C)
  if (rotary) qkv = rotary->forward_qkv(qkv, std::int64_t(L));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i) {
      const float* row = qkv.data().data() + (b * n + i) * 3 * C;
      std::copy_n(row + C, C, cached_k_.data() + (b * block_size_ + L + i) * C);
      std::copy_n(row + 2 * C, C, cached_v_.data() + (b * block_size_ + L + i) * C);
    }
  const Tensor y(cached_attention(qkv.data(), cached_k_, cached_v_, L, std::size_t(n_head)));
  cached_ = L + n;
  return c_proj->forward(y);
}

Array GPT::forward_cached(const IndexArray& tokens) {
  const std::string where = context() + ".forward_cached";
  check<ShapeError>(tokens.dimension() == 2 && tokens.shape()[1] >= 1, where,
                    ": expected tokens of shape (B, n) with n >= 1, got ", tokens.shape());
  const std::size_t B = tokens.shape()[0], n = tokens.shape()[1], C = std::size_t(config_.n_embd());
  const std::size_t rows = std::size_t(config_.block_size());
  check<ValueError>(supports_cache(), where,
                    ": an attention of this model keeps no cache (BlockAttention::supports_cache); "
                    "sample with GenerateOptions().use_cache(false)");
  const auto V = config_.vocab_size();
  for (std::size_t p = 0; p < tokens.size(); ++p)
    check<IndexError>(0 <= tokens.data()[p] && tokens.data()[p] < V,
                      "index out of range in self | ", where, ": expected ids in [0, ", V,
                      "), got ", tokens.data()[p], " at position ",
                      position_str(p, tokens.shape()));
  if (!cache_) {  // a new cache: every attention starts at position 0 too
    reset_cache();
    cache_ = std::make_shared<KVCache>();
    cache_->batch = B;
  }
  KVCache& cache = *cache_;
  const std::size_t L = cache.length;
  check<ShapeError>(B == cache.batch, where, ": expected tokens of batch size ", cache.batch,
                    " (the cache's), got ", tokens.shape(), "; reset_cache() first");
  check<ShapeError>(L + n <= rows, where, ": expected positions up to block_size ", rows, ", got ",
                    L, " cached + ", n, " new");
  autograd::NoGradGuard no_grad;

  // The embedding of positions L .. L+n-1, as embed() computes it for a whole window.
  Array x0 = Array::from_shape({B, n, C});
  const float* table = token_embedding().data().data();
  const float* positions = transformer->wpe         ? transformer->wpe->weight.data().data()
                           : transformer->wpe_table ? transformer->wpe_table->pe.data().data()
                                                    : nullptr;  // rope and none: no table
  const bool scaled = transformer->wte_scaled != nullptr;
  const float scale = scaled ? transformer->wte_scaled->scale() : 1.0f;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i) {
      const float* tok = table + std::size_t(tokens(b, i)) * C;
      const float* pos = positions ? positions + (L + i) * C : nullptr;
      float* out = x0.data() + (b * n + i) * C;
      for (std::size_t c = 0; c < C; ++c)
        out[c] = !pos ? tok[c] : scaled ? tok[c] * scale + pos[c] : tok[c] + pos[c];
    }
  Tensor x(std::move(x0));
  try {
    for (const auto& module : *transformer->h) {
      Block& block = static_cast<Block&>(*module);
      x = x + block.attn->forward_cached(block.ln_1->forward(x));
      x = x + block.mlp->forward(block.ln_2->forward(x));
    }
  } catch (...) {  // the blocks before the failure have cached n more positions, the others not
    reset_cache();
    throw;
  }
  cache.length = L + n;
  return lm_head->forward(transformer->ln_f->forward(last_position(x))).data();
}

Array GPT::last_logits(const IndexArray& idx) {
  autograd::NoGradGuard no_grad;
  return lm_head->forward(last_position(features(idx))).data();  // the head on the last position
}

}  // namespace tapegrad::nn::transformer
