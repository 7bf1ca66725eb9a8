// src/ops/causal_attention.cpp
//
// Causal self-attention on a fused qkv (B, T, 3C) as one op (causal_attention.hpp). Composed from
// single ops it would record a split, three view/transposes (copies here), two matmuls, a scale,
// a masked_fill, a softmax and the inverse transpose; fused, the heads are read and written in
// place through sgemm's leading dimensions, and the scale, the causal mask and the softmax are
// one pass over each row of scores.
// Layout: head h of batch b reads Q = qkv[b, :, h*hs ..], K = qkv[b, :, C + h*hs ..] and
// V = qkv[b, :, 2C + h*hs ..], each (T, hs) with leading dimension 3C, and writes its output at
// y[b, :, h*hs ..], leading dimension C; its gradient goes to the same places of dqkv, which the
// three products of backward cover completely (no zero-fill).
// Saved for backward: qkv (as a tensor, version-checked), the softmax P (B, nh, T, T) and, with
// dropout, the keep mask and the weights actually applied.
// Threads: the (b, h) pairs are independent and split over tapegrad's pool; each pair is computed
// by one thread with the same calls whatever the thread count, so results never depend on it.
#include "tapegrad/ops/causal_attention.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "../exp_f32.hpp"
#include "../parallel.hpp"
#include "gemm.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/dropout.hpp"

namespace tapegrad::ops {

namespace {
struct Dims {
  std::size_t B, T, H, hs;
  std::size_t C() const { return H * hs; }
  std::size_t ld() const { return 3 * H * hs; }   // the row length of qkv
  std::size_t block() const { return T * T; }     // one head's scores
};

// What forward leaves for backward.
struct Saved {
  Array p;                           // (B, H, T, T): the softmax, zeros above the diagonal
  float scale = 1.0f;                // float(1 / sqrt(hs)), as nanoGPT's Python float
  // Dropout on the weights (empty keep: none).
  std::vector<std::uint8_t> keep;    // (B, H, T, T) keep mask
  Array p_used;                      // p * keep / (1 - p_drop): the weights applied to V
  float drop_scale = 1.0f;
  const float* weights() const { return keep.empty() ? p.data() : p_used.data(); }
};

// Row i of the (T, T) block S holds (q_i . k_j) * scale; it becomes softmax over j <= i, then 0:
//   m = max_{j<=i} S[i, j];  e_j = exp(S[i, j] - m);  P[i, j] = e_j / sum_{j<=i} e_j   (sum in double)
void causal_softmax_rows(float* S, std::size_t T) {
  for (std::size_t i = 0; i < T; ++i) {
    float* row = S + i * T;
    const std::size_t n = i + 1;                   // the mask: only keys 0 .. i
    float m = row[0];
    for (std::size_t j = 1; j < n; ++j) m = std::max(m, row[j]);
    for (std::size_t j = 0; j < n; ++j) row[j] = ::tapegrad::detail::exp_f32(row[j] - m);   // vectorised
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) sum += row[j];
    const auto total = static_cast<float>(sum);
    for (std::size_t j = 0; j < n; ++j) row[j] /= total;
    std::fill(row + n, row + T, 0.0f);
  }
}

// The dropout part, kept apart: the keep mask drawn in (b, h, i, j) order, and P' = P * m.
void draw_keep_mask(Saved& s, double p_drop, Generator& gen) {
  s.keep.resize(s.p.size());
  if (p_drop < 1.0) {
    gen.keep_mask(s.keep.data(), s.keep.size(), p_drop);   // one u24 draw per weight, in order
    s.drop_scale = 1.0f / static_cast<float>(1.0 - p_drop);
  } else {
    std::fill(s.keep.begin(), s.keep.end(), std::uint8_t{0});   // p = 1 keeps nothing, draws nothing
    s.drop_scale = 0.0f;
  }
  s.p_used = Array::from_shape(s.p.shape());
}
void apply_keep_mask(const Saved& s, std::size_t at, std::size_t n, const float* in, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * (s.keep[at + i] ? s.drop_scale : 0.0f);
}

// Forward of one (batch b, head h) pair, every product reading the heads in place:
//   S = (Q K^T) * scale          sgemm with alpha = scale: the product, then one rounding by scale
//   P = causal softmax(S)        by rows, zeros above the diagonal
//   P' = P * m                   dropout (only with p > 0)
//   O = P' V                     written into y's columns h*hs ..
void forward_pair(const float* qkv, float* y, Saved& s, const Dims& d, std::size_t b, std::size_t h) {
  const std::size_t C = d.C(), ld = d.ld(), at = (b * d.H + h) * d.block();
  const float* Q = qkv + b * d.T * ld + h * d.hs;
  const float* K = Q + C;
  const float* V = Q + 2 * C;
  float* P = s.p.data() + at;
  detail::gemm(false, true, d.T, d.T, d.hs, s.scale, Q, ld, K, ld, 0.0f, P, d.T);
  causal_softmax_rows(P, d.T);
  const float* W = P;
  if (!s.keep.empty()) {
    apply_keep_mask(s, at, d.block(), P, s.p_used.data() + at);
    W = s.p_used.data() + at;
  }
  detail::gemm(false, false, d.T, d.hs, d.T, 1.0f, W, d.T, V, ld, 0.0f, y + b * d.T * C + h * d.hs, C);
}

// Backward of one pair, restating each forward line before its adjoint (dS is scratch, (T, T)):
//   O = P' V              dV = P'^T dO               dP' = dO V^T
//   P' = P * m            dP = dP' * m
//   P = softmax(S)        dS = P * (dP - rowsum(dP * P))     (0 above the diagonal, where P = 0)
//   S = (Q K^T) * scale   dS = dS * scale;   dQ = dS K;   dK = dS^T Q
void backward_pair(const float* dy, const float* qkv, float* dqkv, float* dS, const Saved& s, const Dims& d,
                   std::size_t b, std::size_t h) {
  const std::size_t C = d.C(), ld = d.ld(), T = d.T, at = (b * d.H + h) * d.block();
  const std::size_t row0 = b * T * ld + h * d.hs;
  const float *Q = qkv + row0, *K = Q + C, *V = Q + 2 * C;
  float *dQ = dqkv + row0, *dK = dQ + C, *dV = dQ + 2 * C;
  const float* dO = dy + b * T * C + h * d.hs;
  const float* P = s.p.data() + at;
  detail::gemm(true, false, T, d.hs, T, 1.0f, s.weights() + at, T, dO, C, 0.0f, dV, ld);
  detail::gemm(false, true, T, T, d.hs, 1.0f, dO, C, V, ld, 0.0f, dS, T);
  if (!s.keep.empty()) apply_keep_mask(s, at, d.block(), dS, dS);
  for (std::size_t i = 0; i < T; ++i) {
    float* g = dS + i * T;
    const float* p = P + i * T;
    const std::size_t n = i + 1;
    double dot = 0.0;
    for (std::size_t j = 0; j < n; ++j) dot += double(g[j]) * double(p[j]);
    const auto c = static_cast<float>(dot);
    for (std::size_t j = 0; j < n; ++j) g[j] = (p[j] * (g[j] - c)) * s.scale;
    std::fill(g + n, g + T, 0.0f);
  }
  detail::gemm(false, false, T, d.hs, T, 1.0f, dS, T, K, ld, 0.0f, dQ, ld);
  detail::gemm(true, false, T, d.hs, T, 1.0f, dS, T, Q, ld, 0.0f, dK, ld);
}
}  // namespace

Tensor causal_self_attention(const Tensor& qkv, std::int64_t n_head, const CausalAttentionOptions& options,
                             Array* attn_out) {
  const std::string where = autograd::where("causal_self_attention");
  const Shape& sq = qkv.shape();
  check<ShapeError>(sq.size() == 3 && sq[2] % 3 == 0, where,
                    ": expected qkv of shape (B, T, 3C), queries, keys and values side by side, got ", sq);
  check<ValueError>(n_head >= 1, where, ": expected n_head >= 1, got ", n_head);
  const std::size_t C = sq[2] / 3, H = static_cast<std::size_t>(n_head);
  check<ShapeError>(C % H == 0, where, ": expected the width C = ", C, " of qkv ", sq,
                    " to be a multiple of n_head = ", n_head);
  check_dropout_probability(options.dropout());
  const Dims d{sq[0], sq[1], H, C / H};

  auto s = std::make_shared<Saved>();
  s->scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.hs)));
  s->p = Array::from_shape({d.B, d.H, d.T, d.T});
  const double p_drop = options.dropout();
  if (options.training() && p_drop > 0.0 && s->p.size() > 0)
    draw_keep_mask(*s, p_drop, options.generator() ? *options.generator() : *default_generator());
  Array out = Array::from_shape({d.B, d.T, C});
  const float* in = qkv.data().data();
  ::tapegrad::detail::parallel_for(d.B * d.H, 1, [&](std::size_t first, std::size_t last) {
    for (std::size_t pair = first; pair < last; ++pair) forward_pair(in, out.data(), *s, d, pair / d.H, pair % d.H);
  });
  if (attn_out) *attn_out = s->keep.empty() ? s->p : s->p_used;
  Tensor y(std::move(out));

  autograd::record("causal_self_attention", y, {qkv}, {qkv}, [qkv, s, d](Array dy) {
    Array dqkv = Array::from_shape(qkv.shape());
    ::tapegrad::detail::parallel_for(d.B * d.H, 1, [&](std::size_t first, std::size_t last) {
      std::vector<float> dS(d.block());
      for (std::size_t pair = first; pair < last; ++pair)
        backward_pair(dy.data(), qkv.data().data(), dqkv.data(), dS.data(), *s, d, pair / d.H, pair % d.H);
    });
    qkv.accumulate_grad(std::move(dqkv), "causal_self_attention");
  });
  return y;
}

}  // namespace tapegrad::ops
