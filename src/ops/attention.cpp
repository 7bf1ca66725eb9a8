// src/ops/attention.cpp
//
// Scaled dot-product attention as one fused op. Composed from single ops it would record seven
// entries (matmul, div, masked_fill, softmax, dropout, matmul, plus the head split and merge as
// transposes, which copy); fused, the scale, the mask and the softmax happen in one pass over
// each row of scores, and the heads are read in place through sgemm's leading dimensions. The
// maths is in the reference kernels below (read them first), and src/kernels/attention.cpp has
// their fast versions, which kernels::pick chooses for the CPU (docs/kernels.md). The op checks,
// broadcasts the mask, draws the dropout mask and records the backward.
// Shapes: q (B, Tq, D) with D = h * d_k, k (B, Tk, D), v (B, Tk, Dv) with Dv = h * d_v; head i
// of batch b is the (T, d) block starting at column i * d of row b * T, with leading dimension D.
// Saved for backward: q, k, v (as tensors, version-checked), the softmax P and, with dropout,
// the applied weights P' and the keep mask (all (B, h, Tq, Tk), small next to the activations).
#include "tapegrad/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "attention_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/dropout.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// The maths as plain loops, one (batch, head) pair and one query row at a time, no threads, no
// BLAS. The fast versions run the products on sgemm, which adds in another order (and with fused
// multiply-adds), and the softmax with exp_f32: the results differ by a few float roundings of the
// terms' size (docs/semantics.md#kernel-sets).

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
}  // namespace

// For each batch b, head hd and query row r (Q, K, V the head's blocks):
//   s_j = (Q_r . K_j) / root_dk, or -1e9 where !allowed[b, r, j]
//   p_j = exp(s_j - max s) / sum_j exp(s_j - max s)
//   w_j = p_j * (keep ? drop_scale : 0)            dropout, only when keep is given
//   out_r = sum_j w_j V_j
void attention_forward(const float* q, const float* k, const float* v, const std::uint8_t* allowed,
                       const std::uint8_t* keep, float drop_scale, float root_dk, float* p,
                       float* p_used, float* out, const AttentionDims& d) {
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
void attention_backward(const float* dout, const float* q, const float* k, const float* v,
                        const std::uint8_t* allowed, const std::uint8_t* keep, float drop_scale,
                        float root_dk, const float* p, const float* p_used, float* dq, float* dk,
                        float* dv, const AttentionDims& d) {
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

// ---- the op -------------------------------------------------------------------------------------

namespace {
using Dims = kernels::AttentionDims;

// What forward leaves for backward.
struct Saved {
  std::vector<std::uint8_t> allowed;  // (B, Tq, Tk): the mask, broadcast; empty = no mask
  Array p;                            // (B, h, Tq, Tk) softmax
  Array p_used;                       // the weights applied to v: p after dropout (or p itself)
  std::vector<std::uint8_t> keep;     // (B, h, Tq, Tk) dropout keep mask; empty = no dropout
  float drop_scale = 1.0f;
  float c = 1.0f;  // sqrt(d_k)
  const std::uint8_t* allowed_or_null() const { return allowed.empty() ? nullptr : allowed.data(); }
  const std::uint8_t* keep_or_null() const { return keep.empty() ? nullptr : keep.data(); }
  float* p_used_or_null() { return keep.empty() ? nullptr : p_used.data(); }
};

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
// The recorded backward: the gradients of the inputs that need one, through the kernel.
void backward_of_inputs(decltype(&attention_backward) kernel, const Array& dy, const Tensor& query,
                        const Tensor& key, const Tensor& value, Saved& s, const Dims& d) {
  const bool want_q = query.requires_grad(), want_k = key.requires_grad(),
             want_v = value.requires_grad();
  Array dq = want_q ? Array::from_shape(query.shape()) : Array();
  Array dk = want_k ? Array::from_shape(key.shape()) : Array();
  Array dv = want_v ? Array::from_shape(value.shape()) : Array();
  kernel(dy.data(), query.data().data(), key.data().data(), value.data().data(),
         s.allowed_or_null(), s.keep_or_null(), s.drop_scale, s.c, s.p.data(), s.p_used_or_null(),
         want_q ? dq.data() : nullptr, want_k ? dk.data() : nullptr, want_v ? dv.data() : nullptr,
         d);
  if (want_q) query.accumulate_grad(std::move(dq), "scaled_dot_product_attention");
  if (want_k) key.accumulate_grad(std::move(dk), "scaled_dot_product_attention");
  if (want_v) value.accumulate_grad(std::move(dv), "scaled_dot_product_attention");
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
    const DropoutStream stream = options.dropout_stream() ? *options.dropout_stream()
                                                          : draw_stream(options.generator());
    const xt::xarray<std::uint8_t> keep = dropout_mask(s->p.shape(), p_drop, stream);
    s->keep.assign(keep.begin(), keep.end());
    s->drop_scale =
        p_drop < 1.0 ? 1.0f / static_cast<float>(1.0 - p_drop) : 0.0f;  // ops::dropout's scale
    s->p_used = Array::from_shape(s->p.shape());
  }
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<attention_forward>();
  const auto backward_kernel = kernels::pick<attention_backward>();
  Array out = Array::from_shape({d.B, d.Tq, d.h * d.dv});
  forward(query.data().data(), key.data().data(), value.data().data(), s->allowed_or_null(),
          s->keep_or_null(), s->drop_scale, s->c, s->p.data(), s->p_used_or_null(), out.data(), d);
  if (attn_out) *attn_out = s->keep.empty() ? s->p : s->p_used;
  Tensor y(std::move(out));

  autograd::record("scaled_dot_product_attention", y, {query, key, value}, {query, key, value},
                   [query, key, value, s, d, backward_kernel](Array dy) {
                     backward_of_inputs(backward_kernel, dy, query, key, value, *s, d);
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
