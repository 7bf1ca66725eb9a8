// src/ops/causal_attention_reference.cpp
//
// Causal self-attention's reference kernels: the maths as plain loops, one (batch, head) pair and
// one query row at a time, no threads, no intrinsics (docs/kernels.md: read these first). The
// fast kernels (causal_attention_fast.cpp) tile the products and vectorise the softmax with
// exp_f32 and four-lane sums; the results differ by a few float roundings
// (docs/semantics.md#kernel-sets).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "causal_attention_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// For each batch b and head h, with q_i, k_j, v_j the rows of the head's (T, hs) blocks:
//   s_ij = (q_i . k_j) * scale                       for j <= i (the causal mask: no j > i)
//   p_ij = exp(s_ij - max_j s_ij) / sum_j exp(...)   softmax over j <= i; p_ij = 0 for j > i
//   w_ij = p_ij * (keep_ij ? drop_scale : 0)         dropout, only when keep is given
//   y_i  = sum_{j <= i} w_ij v_j
void forward(const float* qkv, float* y, float* p, const std::uint8_t* keep, float drop_scale,
             float* p_used, std::size_t B, std::size_t T, std::size_t H, std::size_t hs,
             float scale) {
  const std::size_t C = H * hs, ld = 3 * C;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const float *q = qkv + b * T * ld + h * hs, *k = q + C, *v = q + 2 * C;
      const std::size_t at = (b * H + h) * T * T;
      float* P = p + at;
      float* W = keep ? p_used + at : P;
      for (std::size_t i = 0; i < T; ++i) {
        float m = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j <= i; ++j) {
          float s = 0.0f;
          for (std::size_t c = 0; c < hs; ++c) s += q[i * ld + c] * k[j * ld + c];
          P[i * T + j] = s * scale;
          m = std::max(m, P[i * T + j]);
        }
        double sum = 0.0;
        for (std::size_t j = 0; j <= i; ++j) {
          P[i * T + j] = std::exp(P[i * T + j] - m);
          sum += P[i * T + j];
        }
        for (std::size_t j = 0; j < T; ++j) P[i * T + j] = j <= i ? P[i * T + j] / float(sum) : 0;
        for (std::size_t j = 0; keep && j < T; ++j)
          W[i * T + j] = P[i * T + j] * (keep[at + i * T + j] ? drop_scale : 0.0f);
        for (std::size_t c = 0; c < hs; ++c) {
          float o = 0.0f;
          for (std::size_t j = 0; j <= i; ++j) o += W[i * T + j] * v[j * ld + c];
          y[(b * T + i) * C + h * hs + c] = o;
        }
      }
    }
}

// Each forward line, then its adjoint (g_i = dL/dy_i):
//   y_i = sum_j w_ij v_j         dv_j += w_ij g_i        dw_ij = g_i . v_j
//   w = p * mask                 dp_ij = dw_ij * mask_ij
//   p = softmax(s)               ds_ij = p_ij (dp_ij - sum_j dp_ij p_ij)       (j <= i)
//   s_ij = (q_i . k_j) * scale   dq_i += ds_ij * scale k_j    dk_j += ds_ij * scale q_i
void backward(const float* dy, const float* qkv, const float* p, const std::uint8_t* keep,
              float drop_scale, const float* p_used, float* dqkv, std::size_t B, std::size_t T,
              std::size_t H, std::size_t hs, float scale) {
  const std::size_t C = H * hs, ld = 3 * C;
  std::vector<float> ds(T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t row0 = b * T * ld + h * hs, at = (b * H + h) * T * T;
      const float *q = qkv + row0, *k = q + C, *v = q + 2 * C, *g = dy + b * T * C + h * hs;
      const float *P = p + at, *W = keep ? p_used + at : P;
      float *dq = dqkv + row0, *dk = dq + C, *dv = dq + 2 * C;
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t c = 0; c < hs; ++c) dq[t * ld + c] = dk[t * ld + c] = dv[t * ld + c] = 0;
      for (std::size_t i = 0; i < T; ++i) {
        double dot = 0.0;
        for (std::size_t j = 0; j <= i; ++j) {
          float dp = 0.0f;
          for (std::size_t c = 0; c < hs; ++c) dp += g[i * C + c] * v[j * ld + c];
          ds[j] = keep ? dp * (keep[at + i * T + j] ? drop_scale : 0.0f) : dp;
          dot += double(ds[j]) * double(P[i * T + j]);
        }
        for (std::size_t j = 0; j <= i; ++j) {
          ds[j] = (P[i * T + j] * (ds[j] - float(dot))) * scale;
          for (std::size_t c = 0; c < hs; ++c) {
            dq[i * ld + c] += ds[j] * k[j * ld + c];
            dk[j * ld + c] += ds[j] * q[i * ld + c];
            dv[j * ld + c] += W[i * T + j] * g[i * C + c];
          }
        }
      }
    }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const CausalAttentionKernels causal_attention{forward, backward};

}  // namespace tapegrad::kernels::reference
