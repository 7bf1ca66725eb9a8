// src/kernels/attention.cpp
//
// Scaled dot-product attention's fast kernels, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The maths is the reference kernels'
// (src/ops/attention.cpp); what differs is how it runs:
// - The four products of each head run on detail::gemm (src/core/gemm.hpp: the engine
//   TAPEGRAD_GEMM chooses, OpenBLAS's sgemm by default; bf16 products inside an autocast::bf16
//   scope), the heads read in place through its leading dimensions; the scale, the mask and the softmax are one pass over
//   each row of scores, with exp_f32 (vectorised).
// - Threads: the (batch, head) pairs are independent and shared out over the pool, each pair
//   computed by one thread exactly as it would be alone, so results do not depend on the thread
//   count.
#include <algorithm>
#include <cmath>

#include "exp_f32.hpp"
#include "scratch.hpp"
#include "../core/parallel.hpp"
#include "../ops/attention_kernels.hpp"
#include "../core/gemm.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/attention.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

constexpr float masked_score = -1e9f;

// The (batch, head) pairs are independent: forward and backward share them out over the threads
// (parallel_for), each pair computed by one thread exactly as it would be alone, so the results do
// not depend on the thread count. A chunk is worth a thread from about 2^18 multiply-adds (a
// head's products do Tq * Tk * (d_k + d_v) each way); the products inside run on that thread.
std::size_t pair_grain(const AttentionDims& d) {
  const std::size_t per_pair = std::max<std::size_t>(1, d.Tq * d.Tk * (d.dk + d.dv));
  return std::max<std::size_t>(1, (std::size_t{1} << 18) / per_pair);
}

// Forward, per batch b and head i (Q, K, V the head's blocks):
//   S = Q K^T                          (gemm, Tq x Tk)
//   S = S / c;  S[!allowed] = -1e9     c = root_dk = float(sqrt(d_k)), the tutorial's division
//   P = softmax(S) by rows             max subtracted; the row sum in double, like ops::softmax
//   P' = P * m                         m = keep ? 1 / (1 - p) : 0, keep the mask of the dropout
//                                      stream, element order (b, i, row, col)
//   O = P' V                           (gemm, written into columns i * d_v.. of out)
void forward(const float* q, const float* k, const float* v, const std::uint8_t* allowed,
             const std::uint8_t* keep, float drop_scale, float root_dk, float* p, float* p_used,
             float* out, const AttentionDims& d) {
  const std::size_t D = d.h * d.dk, Dv = d.h * d.dv, block = d.Tq * d.Tk;
  const float* P = keep ? p_used : p;
  detail::parallel_for(d.B * d.h, pair_grain(d), [&](std::size_t first, std::size_t last) {
    for (std::size_t pair = first; pair < last; ++pair) {
      const std::size_t b = pair / d.h, hd = pair % d.h, at = pair * block;
      float* S = p + at;
      detail::gemm(false, true, d.Tq, d.Tk, d.dk, 1.0f, q + b * d.Tq * D + hd * d.dk, D,
                   k + b * d.Tk * D + hd * d.dk, D, 0.0f, S, d.Tk);
      for (std::size_t r = 0; r < d.Tq && d.Tk > 0; ++r) {
        float* row = S + r * d.Tk;
        const std::uint8_t* ok = !allowed ? nullptr : allowed + (b * d.Tq + r) * d.Tk;
        for (std::size_t j = 0; j < d.Tk; ++j)
          row[j] = (ok && !ok[j]) ? masked_score : row[j] / root_dk;
        float m = row[0];
        for (std::size_t j = 1; j < d.Tk; ++j) m = std::max(m, row[j]);
        for (std::size_t j = 0; j < d.Tk; ++j) row[j] = detail::exp_f32(row[j] - m);  // vectorised
        double sum = 0.0;
        for (std::size_t j = 0; j < d.Tk; ++j) sum += row[j];
        const auto total = static_cast<float>(sum);
        for (std::size_t j = 0; j < d.Tk; ++j) row[j] /= total;
      }
      if (keep) {
        float* pu = p_used + at;
        for (std::size_t i = 0; i < block; ++i) pu[i] = S[i] * (keep[at + i] ? drop_scale : 0.0f);
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
void backward(const float* dout, const float* q, const float* k, const float* v,
              const std::uint8_t* allowed, const std::uint8_t* keep, float drop_scale,
              float root_dk, const float* p, const float* p_used, float* dq, float* dk, float* dv,
              const AttentionDims& d) {
  const std::size_t D = d.h * d.dk, Dv = d.h * d.dv, block = d.Tq * d.Tk;
  const float* P_used = keep ? p_used : p;
  // dP, then dS, of every pair (allocated here: a parallel_for body must not throw)
  detail::Scratch<float> scratch(d.B * d.h * block);
  detail::parallel_for(d.B * d.h, pair_grain(d), [&](std::size_t first, std::size_t last) {
    for (std::size_t pair = first; pair < last; ++pair) {
      const std::size_t b = pair / d.h, hd = pair % d.h, at = pair * block;
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
        const float* P = p + at + r * d.Tk;
        if (keep) {
          const std::uint8_t* kept = keep + at + r * d.Tk;
          for (std::size_t j = 0; j < d.Tk; ++j) g[j] = g[j] * (kept[j] ? drop_scale : 0.0f);
        }
        double dot = 0.0;
        for (std::size_t j = 0; j < d.Tk; ++j) dot += double(g[j]) * double(P[j]);
        const auto c = static_cast<float>(dot);
        const std::uint8_t* ok = !allowed ? nullptr : allowed + (b * d.Tq + r) * d.Tk;
        for (std::size_t j = 0; j < d.Tk; ++j)
          g[j] = (ok && !ok[j]) ? 0.0f : P[j] * (g[j] - c) / root_dk;
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

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::attention_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::attention_backward, backward);
