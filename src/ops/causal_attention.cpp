// src/ops/causal_attention.cpp
//
// Causal self-attention on a fused qkv (B, T, 3C) as one op (causal_attention.hpp). Composed from
// single ops it would record a split, three view/transposes (copies here), two matmuls, a scale,
// a masked_fill, a softmax and the inverse transpose; fused, the heads are read and written in
// place, and the scale, the causal mask and the softmax are one pass over each row of scores.
// The maths is in the reference kernels below (read them first), and
// src/kernels/causal_attention.cpp has their fast versions, which kernels::pick chooses for the
// CPU (docs/kernels.md). The op checks, draws the dropout mask and records the backward.
// Saved for backward: qkv (as a tensor, version-checked), the softmax P (B, nh, T, T) and, with
// dropout, the keep mask and the weights actually applied.
#include "tapegrad/ops/causal_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "causal_attention_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/dropout.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// The maths as plain loops, one (batch, head) pair and one query row at a time, no threads. The
// fast versions tile the products and vectorise the softmax with exp_f32 and four-lane sums; the
// results differ by a few float roundings (docs/semantics.md#kernel-sets).

// For each batch b and query head h, with q_i the rows of the head's (T, hs) block and k_j, v_j
// those of its key/value head g = h / (H / KV) (g = h when KV = H):
//   s_ij = (q_i . k_j) * scale [+ bias_hij]          for j <= i (the causal mask: no j > i)
//   p_ij = exp(s_ij - max_j s_ij) / sum_j exp(...)   softmax over j <= i; p_ij = 0 for j > i
//   w_ij = p_ij * (keep_ij ? drop_scale : 0)         dropout, only when keep is given
//   y_i  = sum_{j <= i} w_ij v_j
void causal_attention_forward(const float* qkv, const float* bias, float* y, float* p,
                              const std::uint8_t* keep, float drop_scale, float* p_used,
                              std::size_t B, std::size_t T, std::size_t H, std::size_t KV,
                              std::size_t hs, float scale) {
  const std::size_t C = H * hs, ld = (H + 2 * KV) * hs, group = H / KV;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t g = h / group;
      const float* q = qkv + b * T * ld + h * hs;
      const float* k = qkv + b * T * ld + (H + g) * hs;
      const float* v = qkv + b * T * ld + (H + KV + g) * hs;
      const std::size_t at = (b * H + h) * T * T;
      float* P = p + at;
      float* W = keep ? p_used + at : P;
      const float* bias_h = bias ? bias + h * T * T : nullptr;
      for (std::size_t i = 0; i < T; ++i) {
        float m = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j <= i; ++j) {
          float s = 0.0f;
          for (std::size_t c = 0; c < hs; ++c) s += q[i * ld + c] * k[j * ld + c];
          P[i * T + j] = bias_h ? s * scale + bias_h[i * T + j] : s * scale;
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
// A key/value head shared by several query heads adds up their parts (the += above, over the
// query heads in order), as the gradient of transformers' repeat_kv copy sums them.
void causal_attention_backward(const float* dy, const float* qkv, const float* p,
                               const std::uint8_t* keep, float drop_scale, const float* p_used,
                               float* dqkv, std::size_t B, std::size_t T, std::size_t H,
                               std::size_t KV, std::size_t hs, float scale) {
  const std::size_t C = H * hs, ld = (H + 2 * KV) * hs, group = H / KV;
  std::fill(dqkv, dqkv + B * T * ld, 0.0f);
  std::vector<float> ds(T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t g = h / group, at = (b * H + h) * T * T;
      const std::size_t q0 = b * T * ld + h * hs, k0 = b * T * ld + (H + g) * hs,
                        v0 = b * T * ld + (H + KV + g) * hs;
      const float *q = qkv + q0, *k = qkv + k0, *v = qkv + v0, *gy = dy + b * T * C + h * hs;
      const float *P = p + at, *W = keep ? p_used + at : P;
      float *dq = dqkv + q0, *dk = dqkv + k0, *dv = dqkv + v0;
      for (std::size_t i = 0; i < T; ++i) {
        double dot = 0.0;
        for (std::size_t j = 0; j <= i; ++j) {
          float dp = 0.0f;
          for (std::size_t c = 0; c < hs; ++c) dp += gy[i * C + c] * v[j * ld + c];
          ds[j] = keep ? dp * (keep[at + i * T + j] ? drop_scale : 0.0f) : dp;
          dot += double(ds[j]) * double(P[i * T + j]);
        }
        for (std::size_t j = 0; j <= i; ++j) {
          ds[j] = (P[i * T + j] * (ds[j] - float(dot))) * scale;
          for (std::size_t c = 0; c < hs; ++c) {
            dq[i * ld + c] += ds[j] * k[j * ld + c];
            dk[j * ld + c] += ds[j] * q[i * ld + c];
            dv[j * ld + c] += W[i * T + j] * gy[i * C + c];
          }
        }
      }
    }
}

// ---- the op -------------------------------------------------------------------------------------

namespace {
struct Dims {
  std::size_t B, T, H, KV, hs;
};

// What forward leaves for backward.
struct Saved {
  Array p;             // (B, H, T, T): the softmax, zeros above the diagonal
  float scale = 1.0f;  // float(1 / sqrt(hs)), as nanoGPT's Python float
  // Dropout on the weights (empty keep: none).
  std::vector<std::uint8_t> keep;  // (B, H, T, T) keep mask
  Array p_used;                    // p * keep / (1 - p_drop): the weights applied to V
  float drop_scale = 1.0f;
  const std::uint8_t* keep_or_null() const { return keep.empty() ? nullptr : keep.data(); }
  float* p_used_or_null() { return keep.empty() ? nullptr : p_used.data(); }
};

// The dropout part, kept apart: the keep mask of the stream, element order (b, h, i, j).
void make_keep_mask(Saved& s, double p_drop, DropoutStream stream) {
  const xt::xarray<std::uint8_t> keep = dropout_mask(s.p.shape(), p_drop, stream);
  s.keep.assign(keep.begin(), keep.end());
  s.drop_scale =
      p_drop < 1.0 ? 1.0f / static_cast<float>(1.0 - p_drop) : 0.0f;  // p = 1 keeps nothing
  s.p_used = Array::from_shape(s.p.shape());
}
}  // namespace

Tensor causal_self_attention(const Tensor& qkv, std::int64_t n_head,
                             const CausalAttentionOptions& options, Array* attn_out) {
  const std::string where = autograd::where("causal_self_attention");
  const Shape& sq = qkv.shape();
  check<ValueError>(n_head >= 1, where, ": expected n_head >= 1, got ", n_head);
  const std::optional<std::int64_t> n_kv_head = options.n_kv_head();
  check<ValueError>(!n_kv_head || (*n_kv_head >= 1 && n_head % *n_kv_head == 0), where,
                    ": expected n_kv_head dividing n_head = ", n_head,
                    " (each key/value head serves n_head / n_kv_head query heads), got ",
                    n_kv_head.value_or(0));
  const std::size_t H = static_cast<std::size_t>(n_head),
                    KV = n_kv_head ? static_cast<std::size_t>(*n_kv_head) : H;
  std::size_t hs = 0;
  if (!n_kv_head) {
    check<ShapeError>(
        sq.size() == 3 && sq[2] % 3 == 0, where,
        ": expected qkv of shape (B, T, 3C), queries, keys and values side by side, got ", sq);
    const std::size_t C = sq[2] / 3;
    check<ShapeError>(C % H == 0, where, ": expected the width C = ", C, " of qkv ", sq,
                      " to be a multiple of n_head = ", n_head);
    hs = C / H;
  } else {
    check<ShapeError>(sq.size() == 3 && sq[2] % (H + 2 * KV) == 0, where,
                      ": expected qkv of shape (B, T, (n_head + 2 n_kv_head) hs) = (B, T, ",
                      H + 2 * KV, " hs), the query heads, then the key heads, then the value "
                      "heads, got ", sq);
    hs = sq[2] / (H + 2 * KV);
  }
  const std::size_t C = H * hs;
  check_dropout_probability(options.dropout());
  const Dims d{sq[0], sq[1], H, KV, hs};
  const std::optional<Array>& bias = options.bias();
  check<ShapeError>(!bias || bias->shape() == Shape{d.H, d.T, d.T}, where,
                    ": expected the bias of shape (n_head, T, T) = ", Shape{d.H, d.T, d.T},
                    ", one (T, T) block of scores per head, got ",
                    bias ? bias->shape() : Shape{});

  auto s = std::make_shared<Saved>();
  s->scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.hs)));
  s->p = Array::from_shape({d.B, d.H, d.T, d.T});
  const double p_drop = options.dropout();
  if (options.training() && p_drop > 0.0 && s->p.size() > 0) {
    const DropoutStream stream = options.dropout_stream() ? *options.dropout_stream()
                                                          : draw_stream(options.generator());
    make_keep_mask(*s, p_drop, stream);
  }
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<causal_attention_forward>();
  const auto backward_kernel = kernels::pick<causal_attention_backward>();
  Array out = Array::from_shape({d.B, d.T, C});
  forward(qkv.data().data(), bias ? bias->data() : nullptr, out.data(), s->p.data(),
          s->keep_or_null(), s->drop_scale, s->p_used_or_null(), d.B, d.T, d.H, d.KV, d.hs,
          s->scale);
  if (attn_out) *attn_out = s->keep.empty() ? s->p : s->p_used;
  Tensor y(std::move(out));

  autograd::record(
      "causal_self_attention", y, {qkv}, {qkv}, [qkv, s, d, backward_kernel](Array dy) {
        Array dqkv = Array::from_shape(qkv.shape());  // the kernel writes every element
        backward_kernel(dy.data(), qkv.data().data(), s->p.data(), s->keep_or_null(), s->drop_scale,
                        s->p_used_or_null(), dqkv.data(), d.B, d.T, d.H, d.KV, d.hs, s->scale);
        qkv.accumulate_grad(std::move(dqkv), "causal_self_attention");
      });
  return y;
}

}  // namespace tapegrad::ops
