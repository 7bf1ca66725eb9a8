// src/ops/attention.cpp
//
// Scaled dot-product attention as one fused op. Composed from single ops it would record seven
// entries (matmul, div, masked_fill, softmax, dropout, matmul, plus the head split and merge as
// transposes, which copy); fused, the scale, the mask and the softmax happen in one pass over
// each row of scores, and the heads are read in place through sgemm's leading dimensions.
// Shapes: q (B, Tq, D) with D = h * d_k, k (B, Tk, D), v (B, Tk, Dv) with Dv = h * d_v; head i
// of batch b is the (T, d) block starting at column i * d of row b * T, with leading dimension D.
// Saved for backward: q, k, v (as tensors, version-checked), the softmax P and, with dropout,
// the applied weights P' and the keep mask (all (B, h, Tq, Tk), small next to the activations).
#include "tapegrad/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "../exp_f32.hpp"
#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/dropout.hpp"
#include "gemm.hpp"

namespace tapegrad::ops {

namespace {
struct Dims {
  std::size_t B, Tq, Tk, h, dk, dv;
  std::size_t D() const { return h * dk; }
  std::size_t Dv() const { return h * dv; }
  std::size_t block() const { return Tq * Tk; }  // one head's scores
};

// What forward leaves for backward.
struct Saved {
  std::vector<std::uint8_t> allowed;  // (B, Tq, Tk): the mask, broadcast; empty = no mask
  Array p;                            // (B, h, Tq, Tk) softmax
  Array p_used;                       // the weights applied to v: p after dropout (or p itself)
  std::vector<std::uint8_t> keep;     // (B, h, Tq, Tk) dropout keep mask; empty = no dropout
  float drop_scale = 1.0f;
  float c = 1.0f;  // sqrt(d_k)
};

constexpr float masked_score = -1e9f;

// The (batch, head) pairs are independent: forward and backward share them out over the threads
// (parallel_for), each pair computed by one thread exactly as it would be alone, so the results do
// not depend on the thread count. A chunk is worth a thread from about 2^18 multiply-adds (a
// head's products do Tq * Tk * (d_k + d_v) each way); the products inside run on that thread.
std::size_t pair_grain(const Dims& d) {
  const std::size_t per_pair = std::max<std::size_t>(1, d.Tq * d.Tk * (d.dk + d.dv));
  return std::max<std::size_t>(1, (std::size_t{1} << 18) / per_pair);
}

// Forward, per batch b and head i (Q, K, V the head's blocks):
//   S = Q K^T                          (sgemm, Tq x Tk)
//   S = S / c;  S[!allowed] = -1e9     c = float(sqrt(d_k)), the tutorial's division
//   P = softmax(S) by rows             max subtracted; the row sum in double, like ops::softmax
//   P' = P * m                         m = keep ? 1 / (1 - p) : 0, keep the mask of the dropout stream, element order (b, i, row, col)
//   O = P' V                           (sgemm, written into columns i * d_v.. of out)
void attention_forward(const float* q, const float* k, const float* v, float* out, Saved& s,
                       const Dims& d) {
  const std::size_t D = d.D(), Dv = d.Dv();
  const float* P = s.keep.empty() ? s.p.data() : s.p_used.data();
  ::tapegrad::detail::parallel_for(
      d.B * d.h, pair_grain(d), [&](std::size_t first, std::size_t last) {
        for (std::size_t pair = first; pair < last; ++pair) {
          const std::size_t b = pair / d.h, hd = pair % d.h, at = pair * d.block();
          float* S = s.p.data() + at;
          detail::gemm(false, true, d.Tq, d.Tk, d.dk, 1.0f, q + b * d.Tq * D + hd * d.dk, D,
                       k + b * d.Tk * D + hd * d.dk, D, 0.0f, S, d.Tk);
          for (std::size_t r = 0; r < d.Tq && d.Tk > 0; ++r) {
            float* row = S + r * d.Tk;
            const std::uint8_t* ok =
                s.allowed.empty() ? nullptr : s.allowed.data() + (b * d.Tq + r) * d.Tk;
            for (std::size_t j = 0; j < d.Tk; ++j)
              row[j] = (ok && !ok[j]) ? masked_score : row[j] / s.c;
            float m = row[0];
            for (std::size_t j = 1; j < d.Tk; ++j) m = std::max(m, row[j]);
            for (std::size_t j = 0; j < d.Tk; ++j)
              row[j] = ::tapegrad::detail::exp_f32(row[j] - m);  // vectorised
            double sum = 0.0;
            for (std::size_t j = 0; j < d.Tk; ++j) sum += row[j];
            const auto total = static_cast<float>(sum);
            for (std::size_t j = 0; j < d.Tk; ++j) row[j] /= total;
          }
          if (!s.keep.empty()) {
            float* pu = s.p_used.data() + at;
            for (std::size_t i = 0; i < d.block(); ++i)
              pu[i] = S[i] * (s.keep[at + i] ? s.drop_scale : 0.0f);
          }
          detail::gemm(false, false, d.Tq, d.dv, d.Tk, 1.0f, P + at, d.Tk,
                       v + b * d.Tk * Dv + hd * d.dv, Dv, 0.0f, out + b * d.Tq * Dv + hd * d.dv,
                       Dv);
        }
      });
}

// Backward, per batch b and head i, restating each forward line before its adjoint:
//   O = P' V              dP' = dO V^T               dV = P'^T dO
//   P' = P * m            dP = dP' * m
//   P = softmax(S)        dS = P * (dP - rowsum(dP * P))
//   S[!allowed] = -1e9    dS[!allowed] = 0           (a filled score does not depend on Q or K)
//   S = S / c             dS = dS / c
//   S = Q K^T             dQ = dS K                  dK = dS^T Q
// Any of dq, dk, dv may be null (that input needs no gradient).
void attention_backward(const float* dout, const float* q, const float* k, const float* v,
                        const Saved& s, const Dims& d, float* dq, float* dk, float* dv) {
  const std::size_t D = d.D(), Dv = d.Dv();
  const float* P_used = s.keep.empty() ? s.p.data() : s.p_used.data();
  // dP, then dS, of every pair (allocated here: a parallel_for body must not throw)
  std::vector<float> scratch(d.B * d.h * d.block());
  ::tapegrad::detail::parallel_for(
      d.B * d.h, pair_grain(d), [&](std::size_t first, std::size_t last) {
        for (std::size_t pair = first; pair < last; ++pair) {
          const std::size_t b = pair / d.h, hd = pair % d.h, at = pair * d.block();
          float* dS = scratch.data() + at;
          const float* dO = dout + b * d.Tq * Dv + hd * d.dv;
          const float* V = v + b * d.Tk * Dv + hd * d.dv;
          if (dv)
            detail::gemm(true, false, d.Tk, d.dv, d.Tq, 1.0f, P_used + at, d.Tk, dO, Dv, 0.0f,
                         dv + b * d.Tk * Dv + hd * d.dv, Dv);
          if (!dq && !dk) continue;
          detail::gemm(false, true, d.Tq, d.Tk, d.dv, 1.0f, dO, Dv, V, Dv, 0.0f, dS,
                       d.Tk);  // dP'
          for (std::size_t r = 0; r < d.Tq; ++r) {
            float* g = dS + r * d.Tk;
            const float* P = s.p.data() + at + r * d.Tk;
            if (!s.keep.empty()) {
              const std::uint8_t* kept = s.keep.data() + at + r * d.Tk;
              for (std::size_t j = 0; j < d.Tk; ++j) g[j] = g[j] * (kept[j] ? s.drop_scale : 0.0f);
            }
            double dot = 0.0;
            for (std::size_t j = 0; j < d.Tk; ++j) dot += double(g[j]) * double(P[j]);
            const auto c = static_cast<float>(dot);
            const std::uint8_t* ok =
                s.allowed.empty() ? nullptr : s.allowed.data() + (b * d.Tq + r) * d.Tk;
            for (std::size_t j = 0; j < d.Tk; ++j)
              g[j] = (ok && !ok[j]) ? 0.0f : P[j] * (g[j] - c) / s.c;
          }
          const float* Q = q + b * d.Tq * D + hd * d.dk;
          const float* K = k + b * d.Tk * D + hd * d.dk;
          if (dq)
            detail::gemm(false, false, d.Tq, d.dk, d.Tk, 1.0f, dS, d.Tk, K, D, 0.0f,
                         dq + b * d.Tq * D + hd * d.dk, D);
          if (dk)
            detail::gemm(true, false, d.Tk, d.dk, d.Tq, 1.0f, dS, d.Tk, Q, D, 0.0f,
                         dk + b * d.Tk * D + hd * d.dk, D);
        }
      });
}

// The mask broadcast to (B, Tq, Tk) as bytes, after checking that it broadcasts.
std::vector<std::uint8_t> broadcast_mask(const Mask& mask, const Dims& d,
                                         const std::string& where) {
  const Shape target{d.B, d.Tq, d.Tk};
  const Shape& m = mask.shape();
  bool fits = m.size() <= 3;
  for (std::size_t i = 0; fits && i < m.size(); ++i) {
    const std::size_t dm = m[m.size() - 1 - i];
    fits = dm == target[2 - i] || dm == 1;
  }
  if (!fits)
    fail<ShapeError>("The size of the mask must be broadcastable to the size of the scores | ",
                     where, ": expected a mask broadcastable to (B, Tq, Tk) = ", target, ", got ",
                     m);
  std::size_t stride[3] = {0, 0, 0};  // 0 along broadcast dimensions
  std::size_t step = 1;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const std::size_t dim = m.size() - 1 - i;  // mask dimension, aligned right with target 2 - i
    stride[2 - i] = m[dim] == 1 ? 0 : step;
    step *= m[dim];
  }
  std::vector<std::uint8_t> out(d.B * d.Tq * d.Tk);
  const bool* src = mask.data();
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t r = 0; r < d.Tq; ++r)
      for (std::size_t c = 0; c < d.Tk; ++c)
        out[(b * d.Tq + r) * d.Tk + c] = src[b * stride[0] + r * stride[1] + c * stride[2]] ? 1 : 0;
  return out;
}
}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Mask>& mask,
                                    const AttentionOptions& options, Array* attn_out) {
  const std::string where = autograd::where("scaled_dot_product_attention");
  const Shape &sq = query.shape(), &sk = key.shape(), &sv = value.shape();
  check<ShapeError>(
      sq.size() == 3 && sk.size() == 3 && sv.size() == 3, where,
      ": expected query (B, Tq, h*d_k), key (B, Tk, h*d_k) and value (B, Tk, h*d_v), got shapes ",
      sq, ", ", sk, " and ", sv);
  check<ShapeError>(sk[0] == sq[0] && sv[0] == sq[0] && sv[1] == sk[1] && sk[2] == sq[2], where,
                    ": expected query (B, Tq, h*d_k), key (B, Tk, h*d_k) and value (B, Tk, h*d_v) "
                    "with the same B, Tk and h*d_k, got shapes ",
                    sq, ", ", sk, " and ", sv);
  const std::int64_t h = options.heads();
  check<ValueError>(h >= 1, where, ": expected heads >= 1, got ", h);
  const auto hu = static_cast<std::size_t>(h);
  check<ShapeError>(sq[2] % hu == 0 && sv[2] % hu == 0, where, ": expected the widths of query (",
                    sq[2], ") and value (", sv[2], ") to be multiples of heads = ", h);
  check_dropout_probability(options.dropout());
  const Dims d{sq[0], sq[1], sk[1], hu, sq[2] / hu, sv[2] / hu};

  auto s = std::make_shared<Saved>();
  if (mask) s->allowed = broadcast_mask(*mask, d, where);
  s->c = static_cast<float>(std::sqrt(static_cast<double>(d.dk)));
  s->p = Array::from_shape({d.B, d.h, d.Tq, d.Tk});
  const double p_drop = options.dropout();
  if (options.training() && p_drop > 0.0 && s->p.size() > 0) {
    DropoutStream stream;
    if (options.dropout_stream())
      stream = *options.dropout_stream();
    else
      stream = {(options.generator() ? *options.generator() : *default_generator()).next_u64(), 0};
    const xt::xarray<std::uint8_t> keep = dropout_mask(s->p.shape(), p_drop, stream);
    s->keep.assign(keep.begin(), keep.end());
    s->drop_scale =
        p_drop < 1.0 ? 1.0f / static_cast<float>(1.0 - p_drop) : 0.0f;  // ops::dropout's scale
    s->p_used = Array::from_shape(s->p.shape());
  }
  Array out = Array::from_shape({d.B, d.Tq, d.Dv()});
  attention_forward(query.data().data(), key.data().data(), value.data().data(), out.data(), *s, d);
  if (attn_out) *attn_out = s->keep.empty() ? s->p : s->p_used;
  Tensor y(std::move(out));

  autograd::record("scaled_dot_product_attention", y, {query, key, value}, {query, key, value},
                   [query, key, value, s, d](Array dy) {
                     Array dq = query.requires_grad() ? Array::from_shape(query.shape()) : Array();
                     Array dk = key.requires_grad() ? Array::from_shape(key.shape()) : Array();
                     Array dv = value.requires_grad() ? Array::from_shape(value.shape()) : Array();
                     attention_backward(dy.data(), query.data().data(), key.data().data(),
                                        value.data().data(), *s, d,
                                        query.requires_grad() ? dq.data() : nullptr,
                                        key.requires_grad() ? dk.data() : nullptr,
                                        value.requires_grad() ? dv.data() : nullptr);
                     if (query.requires_grad())
                       query.accumulate_grad(std::move(dq), "scaled_dot_product_attention");
                     if (key.requires_grad())
                       key.accumulate_grad(std::move(dk), "scaled_dot_product_attention");
                     if (value.requires_grad())
                       value.accumulate_grad(std::move(dv), "scaled_dot_product_attention");
                   });
  return y;
}

Mask subsequent_mask(std::int64_t size) {
  check<ValueError>(size >= 0, "subsequent_mask: expected size >= 0, got ", size);
  const auto n = static_cast<std::size_t>(size);
  Mask m = Mask::from_shape({1, n, n});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) m.data()[i * n + j] = j <= i;
  return m;
}

Mask padding_mask(const IndexArray& ids, std::int64_t pad) {
  check<ShapeError>(ids.dimension() == 2, "padding_mask: expected ids of shape (B, T), got ",
                    ids.shape());
  const std::size_t B = ids.shape()[0], T = ids.shape()[1];
  Mask m = Mask::from_shape({B, 1, T});
  for (std::size_t i = 0; i < B * T; ++i) m.data()[i] = ids.data()[i] != pad;
  return m;
}

Mask target_mask(const IndexArray& tgt, std::int64_t pad) {
  check<ShapeError>(tgt.dimension() == 2, "target_mask: expected tgt of shape (B, T), got ",
                    tgt.shape());
  const std::size_t B = tgt.shape()[0], T = tgt.shape()[1];
  Mask m = Mask::from_shape({B, T, T});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j)
        m.data()[(b * T + i) * T + j] = j <= i && tgt.data()[b * T + j] != pad;
  return m;
}

}  // namespace tapegrad::ops
