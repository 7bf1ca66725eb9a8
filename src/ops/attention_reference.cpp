// src/ops/attention_reference.cpp
//
// Scaled dot-product attention's reference kernels: the maths as plain loops, one (batch, head)
// pair and one query row at a time, no threads, no BLAS, no intrinsics (docs/kernels.md: read
// these first). The fast kernels (attention_fast.cpp) run the products on sgemm, which adds in
// another order (and with fused multiply-adds), and the softmax with exp_f32: the results differ
// by a few float roundings of the terms' size (docs/semantics.md#kernel-sets).
#include <algorithm>
#include <cmath>
#include <vector>

#include "attention_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// The (T, d) block of head hd of batch b in an array of rows of h * d floats: row t, column c.
struct Head {
  const float* at;
  std::size_t ld;
  float operator()(std::size_t t, std::size_t c) const { return at[t * ld + c]; }
};
Head head(const float* x, std::size_t b, std::size_t T, std::size_t hd, std::size_t h,
          std::size_t d) {
  return {x + b * T * h * d + hd * d, h * d};
}

// For each batch b, head hd and query row r (Q, K, V the head's blocks):
//   s_j = (Q_r . K_j) / root_dk, or -1e9 where !allowed[b, r, j]
//   p_j = exp(s_j - max s) / sum_j exp(s_j - max s)
//   w_j = p_j * (keep ? drop_scale : 0)            dropout, only when keep is given
//   out_r = sum_j w_j V_j
void forward(const float* q, const float* k, const float* v, const std::uint8_t* allowed,
             const std::uint8_t* keep, float drop_scale, float root_dk, float* p, float* p_used,
             float* out, const AttentionDims& d) {
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t hd = 0; hd < d.h; ++hd) {
      const Head Q = head(q, b, d.Tq, hd, d.h, d.dk), K = head(k, b, d.Tk, hd, d.h, d.dk),
                 V = head(v, b, d.Tk, hd, d.h, d.dv);
      for (std::size_t r = 0; r < d.Tq; ++r) {
        const std::size_t at = ((b * d.h + hd) * d.Tq + r) * d.Tk;  // row r of the scores
        float* P = p + at;
        float* W = keep ? p_used + at : P;
        for (std::size_t j = 0; j < d.Tk; ++j) {
          float s = 0.0f;
          for (std::size_t c = 0; c < d.dk; ++c) s += Q(r, c) * K(j, c);
          const bool masked = allowed && !allowed[(b * d.Tq + r) * d.Tk + j];
          P[j] = masked ? -1e9f : s / root_dk;
        }
        const float m = d.Tk ? *std::max_element(P, P + d.Tk) : 0.0f;
        double sum = 0.0;
        for (std::size_t j = 0; j < d.Tk; ++j) {
          P[j] = std::exp(P[j] - m);
          sum += P[j];
        }
        for (std::size_t j = 0; j < d.Tk; ++j) P[j] = P[j] / float(sum);
        for (std::size_t j = 0; keep && j < d.Tk; ++j)
          W[j] = P[j] * (keep[at + j] ? drop_scale : 0);
        for (std::size_t c = 0; c < d.dv; ++c) {
          float o = 0.0f;
          for (std::size_t j = 0; j < d.Tk; ++j) o += W[j] * V(j, c);
          out[(b * d.Tq + r) * d.h * d.dv + hd * d.dv + c] = o;
        }
      }
    }
}

// Each forward line, then its adjoint (G = dL/dout, the head's block):
//   out_r = sum_j w_j V_j         dV_j += w_j G_r          dw_j = G_r . V_j
//   w = p * mask                  dp_j = dw_j * mask_j
//   p = softmax(s)                ds_j = p_j (dp_j - sum_j dp_j p_j)
//   s_j = (Q_r . K_j) / root_dk   ds_j = 0 where masked, else ds_j / root_dk
//                                 dQ_r += ds_j K_j         dK_j += ds_j Q_r
void backward(const float* dout, const float* q, const float* k, const float* v,
              const std::uint8_t* allowed, const std::uint8_t* keep, float drop_scale,
              float root_dk, const float* p, const float* p_used, float* dq, float* dk, float* dv,
              const AttentionDims& d) {
  // written, not added: start from 0
  if (dq) std::fill_n(dq, d.B * d.Tq * d.h * d.dk, 0.0f);
  if (dk) std::fill_n(dk, d.B * d.Tk * d.h * d.dk, 0.0f);
  if (dv) std::fill_n(dv, d.B * d.Tk * d.h * d.dv, 0.0f);
  std::vector<float> ds(d.Tk);
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t hd = 0; hd < d.h; ++hd) {
      const Head Q = head(q, b, d.Tq, hd, d.h, d.dk), K = head(k, b, d.Tk, hd, d.h, d.dk),
                 V = head(v, b, d.Tk, hd, d.h, d.dv), G = head(dout, b, d.Tq, hd, d.h, d.dv);
      for (std::size_t r = 0; r < d.Tq; ++r) {
        const std::size_t at = ((b * d.h + hd) * d.Tq + r) * d.Tk;
        const float *P = p + at, *W = keep ? p_used + at : P;
        double dot = 0.0;
        for (std::size_t j = 0; j < d.Tk; ++j) {
          float dw = 0.0f;
          for (std::size_t c = 0; c < d.dv; ++c) dw += G(r, c) * V(j, c);
          ds[j] = keep ? dw * (keep[at + j] ? drop_scale : 0.0f) : dw;
          dot += double(ds[j]) * double(P[j]);
        }
        for (std::size_t j = 0; j < d.Tk; ++j) {
          const bool masked = allowed && !allowed[(b * d.Tq + r) * d.Tk + j];
          ds[j] = masked ? 0.0f : P[j] * (ds[j] - float(dot)) / root_dk;
          for (std::size_t c = 0; dq && c < d.dk; ++c)
            dq[(b * d.Tq + r) * d.h * d.dk + hd * d.dk + c] += ds[j] * K(j, c);
          for (std::size_t c = 0; dk && c < d.dk; ++c)
            dk[(b * d.Tk + j) * d.h * d.dk + hd * d.dk + c] += ds[j] * Q(r, c);
          for (std::size_t c = 0; dv && c < d.dv; ++c)
            dv[(b * d.Tk + j) * d.h * d.dv + hd * d.dv + c] += W[j] * G(r, c);
        }
      }
    }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const AttentionKernels attention{forward, backward};

}  // namespace tapegrad::kernels::reference
