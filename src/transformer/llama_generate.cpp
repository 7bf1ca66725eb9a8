// src/transformer/llama_generate.cpp: the Llama as a CausalLM, its forward pass with a cache of
// keys and values for the sampler (generate.cpp).
//
// Each layer's attention keeps the keys (already turned) and the values of the positions seen,
// K heads of d columns each, (B, capacity, K d): grouped-query attention caches H / K times less
// than the queries would need, which is much of its point. The capacity doubles as positions
// arrive (up to max_position_embeddings), so a short generation never holds a cache of the full
// context. New positions L .. L+n-1 are turned at their absolute positions, as the uncached
// forward turns the same positions. Nothing records on the tape (NoGradGuard), and dropout is off.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/transformer/llama.hpp"

namespace tapegrad::nn::transformer {

namespace {
// The last position of x (B, n, C) as (B, C).
Tensor last_position(const Tensor& x) {
  const std::size_t B = x.shape()[0], n = x.shape()[1], C = x.shape()[2];
  Array out = Array::from_shape({B, C});
  for (std::size_t b = 0; b < B; ++b)
    std::copy_n(x.data().data() + (b * n + n - 1) * C, C, out.data() + b * C);
  return Tensor(std::move(out));
}

// Attention of n new positions (absolute L .. L+n-1) over the cache, for qkv (B, n, (H + 2K) d)
// whose keys and values are already in the cache at rows L .. L+n-1. Query head h of position
// L+i reads key/value head g = h / (H / K) of rows 0 .. L+i:
//   s_j = (q . k_j) * scale;  p = softmax(s) (sum in double);  out = sum_j p_j v_j
Array cached_attention(const Array& qkv, const Array& K, const Array& V, std::size_t L,
                       std::size_t H, std::size_t KV, std::size_t d) {
  const std::size_t B = qkv.shape()[0], n = qkv.shape()[1], ld = (H + 2 * KV) * d,
                    capacity = K.shape()[1], group = H / KV;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  Array out = Array::from_shape({B, n, H * d});
  std::vector<float> s(L + n);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t h = 0; h < H; ++h) {
        const float* q = qkv.data() + (b * n + i) * ld + h * d;
        const std::size_t g = h / group, keys = L + i + 1;
        float m = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < keys; ++j) {
          const float* k = K.data() + (b * capacity + j) * KV * d + g * d;
          float dot = 0.0f;
          for (std::size_t c = 0; c < d; ++c) dot += q[c] * k[c];
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        double sum = 0.0;
        for (std::size_t j = 0; j < keys; ++j) sum += s[j] = std::exp(s[j] - m);
        const auto total = static_cast<float>(sum);
        float* o = out.data() + (b * n + i) * H * d + h * d;
        std::fill_n(o, d, 0.0f);
        for (std::size_t j = 0; j < keys; ++j) {
          const float p = s[j] / total;
          const float* v = V.data() + (b * capacity + j) * KV * d + g * d;
          for (std::size_t c = 0; c < d; ++c) o[c] += p * v[c];
        }
      }
  return out;
}

// `a` (B, capacity, w) with room for `rows` rows: the same rows, in a larger array when needed
// (twice the rows, at most `limit`).
void reserve_rows(Array& a, std::size_t B, std::size_t w, std::size_t used, std::size_t rows,
                  std::size_t limit) {
  if (a.dimension() == 3 && a.shape()[0] == B && a.shape()[1] >= rows) return;
  const std::size_t old_capacity = a.dimension() == 3 ? a.shape()[1] : 0;
  const std::size_t capacity = std::min(limit, std::max({rows, 2 * old_capacity, std::size_t(16)}));
  Array grown = Array::from_shape({B, capacity, w});
  for (std::size_t b = 0; b < B && used > 0; ++b)
    std::copy_n(a.data() + b * old_capacity * w, used * w, grown.data() + b * capacity * w);
  a = std::move(grown);
}
}  // namespace

void LlamaAttention::reset_cache() {
  cached_k_ = Array();
  cached_v_ = Array();
  cached_ = 0;
}

Tensor LlamaAttention::forward_cached(const Tensor& x, RotaryEmbedding& rotary) {
  autograd::NoGradGuard no_grad;
  const std::size_t B = x.shape()[0], n = x.shape()[1], L = cached_;
  const std::size_t H = std::size_t(num_heads), KV = std::size_t(num_key_value_heads),
                    d = std::size_t(head_dim), w = KV * d;
  const std::size_t limit = std::size_t(rotary.options().max_len());
  check<ShapeError>(L + n <= limit, context(), ".forward_cached: expected positions up to ", limit,
                    ", got ", L, " cached + ", n, " new");
  check<ShapeError>(L == 0 || cached_k_.shape()[0] == B, context(),
                    ".forward_cached: expected a batch of the cache's size ",
                    L == 0 ? B : cached_k_.shape()[0], ", got ", x.shape());
  const Tensor qkv = rotated_qkv(x, rotary, std::int64_t(L));  // (B, n, (H + 2K) d)
  reserve_rows(cached_k_, B, w, L, L + n, limit);
  reserve_rows(cached_v_, B, w, L, L + n, limit);
  const std::size_t capacity = cached_k_.shape()[1], ld = (H + 2 * KV) * d;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i) {
      const float* row = qkv.data().data() + (b * n + i) * ld;
      std::copy_n(row + H * d, w, cached_k_.data() + (b * capacity + L + i) * w);
      std::copy_n(row + (H + KV) * d, w, cached_v_.data() + (b * capacity + L + i) * w);
    }
  const Tensor y(cached_attention(qkv.data(), cached_k_, cached_v_, L, H, KV, d));
  cached_ = L + n;
  return o_proj->forward(y);
}

Tensor LlamaDecoderLayer::forward_cached(const Tensor& x, RotaryEmbedding& rotary) {
  const Tensor h = x + self_attn->forward_cached(input_layernorm->forward(x), rotary);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

void LlamaForCausalLM::reset_cache() {
  cache_batch_ = 0;
  for (const auto& layer : *model->layers)
    static_cast<LlamaDecoderLayer&>(*layer).self_attn->reset_cache();
}

Array LlamaForCausalLM::forward_cached(const IndexArray& tokens) {
  const std::string where = context() + ".forward_cached";
  check<ShapeError>(tokens.dimension() == 2 && tokens.shape()[1] >= 1, where,
                    ": expected tokens of shape (B, n) with n >= 1, got ", tokens.shape());
  const std::size_t B = tokens.shape()[0], n = tokens.shape()[1];
  const auto& first = static_cast<const LlamaDecoderLayer&>((*model->layers)[0]);
  const std::size_t L = first.self_attn->cached(),
                    P = std::size_t(config_.max_position_embeddings());
  check<ShapeError>(L == 0 || B == cache_batch_, where, ": expected tokens of batch size ",
                    cache_batch_, " (the cache's), got ", tokens.shape(), "; reset_cache() first");
  check<ShapeError>(L + n <= P, where, ": expected positions up to max_position_embeddings ", P,
                    ", got ", L, " cached + ", n, " new");
  autograd::NoGradGuard no_grad;
  Tensor x = model->embed_tokens->forward(tokens);  // its IndexError names an id out of range
  try {
    for (const auto& layer : *model->layers)
      x = static_cast<LlamaDecoderLayer&>(*layer).forward_cached(x, *model->rotary_emb);
  } catch (...) {  // the layers before the failure have cached n more positions, the others not
    reset_cache();
    throw;
  }
  cache_batch_ = B;
  return head(model->norm->forward(last_position(x))).data();
}

Array LlamaForCausalLM::last_logits(const IndexArray& idx) {
  autograd::NoGradGuard no_grad;
  return head(last_position(features(idx))).data();  // the head on the last position only
}

}  // namespace tapegrad::nn::transformer
