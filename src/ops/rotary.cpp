// src/ops/rotary.cpp
//
// Rotary position embeddings: the checks, the forward kernel and a recorded backward kernel (the
// convention and the references: include/tapegrad/ops/rotary.hpp). The maths is in the reference
// kernels below (read them first); their fast versions in src/kernels/rotary.cpp are picked for
// the CPU by kernels::pick (docs/kernels.md). x is viewed as (outer, T, W): each row of W columns
// sits at position m = offset + t; its first `rotated` columns are heads of head_dim columns, the
// rest (the values of a packed qkv) are copied. Nothing is saved but the tables.
#include "tapegrad/ops/rotary.hpp"

#include <cmath>
#include <string>

#include "rotary_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// One row at a time. The fast versions make the same float operations: the same bits.

// Row r = (o, t) of x sits at position m = offset + t. Its columns [0, rotated) are heads of
// 2 * half columns; pair p of a head, (x0, x1) = columns (2p, 2p + 1), or (p, p + half) with
// halves, turns by the angle m * theta_p, with c = cos[m, p] and s = sin[m, p]:
//   y0 = x0 c - x1 s        y1 = x0 s + x1 c           (y = R x, R a rotation)
// (With halves this is transformers' q * cos + rotate_half(q) * sin, rounding for rounding:
// y1 = x1 c + x0 s is the same float sum.) The columns [rotated, W) (the values of a packed qkv)
// are copied.
void rotary_forward(const float* x, const float* cos, const float* sin, float* y,
                    const RotaryLayout& l) {
  for (std::size_t r = 0; r < l.outer * l.T; ++r) {
    const std::size_t m = l.offset + r % l.T;
    for (std::size_t col = 0; col < l.W; ++col) y[r * l.W + col] = x[r * l.W + col];
    for (std::size_t head = 0; head < l.rotated; head += 2 * l.half)
      for (std::size_t p = 0; p < l.half; ++p) {
        const std::size_t i0 = r * l.W + head + (l.halves ? p : 2 * p);
        const std::size_t i1 = l.halves ? i0 + l.half : i0 + 1;
        const float c = cos[m * l.half + p], s = sin[m * l.half + p];
        const float x0 = x[i0], x1 = x[i1];
        y[i0] = x0 * c - x1 * s;
        y[i1] = x0 * s + x1 * c;
      }
  }
}

// dx = R^T dy, the inverse turn (the angle negated):
//   dx0 = dy0 c + dy1 s     dx1 = -dy0 s + dy1 c
// and the copied columns pass dy through.
void rotary_backward(const float* dy, const float* cos, const float* sin, float* dx,
                     const RotaryLayout& l) {
  for (std::size_t r = 0; r < l.outer * l.T; ++r) {
    const std::size_t m = l.offset + r % l.T;
    for (std::size_t col = 0; col < l.W; ++col) dx[r * l.W + col] = dy[r * l.W + col];
    for (std::size_t head = 0; head < l.rotated; head += 2 * l.half)
      for (std::size_t p = 0; p < l.half; ++p) {
        const std::size_t i0 = r * l.W + head + (l.halves ? p : 2 * p);
        const std::size_t i1 = l.halves ? i0 + l.half : i0 + 1;
        const float c = cos[m * l.half + p], s = sin[m * l.half + p];
        const float dy0 = dy[i0], dy1 = dy[i1];
        dx[i0] = dy0 * c + dy1 * s;
        dx[i1] = -dy0 * s + dy1 * c;
      }
  }
}

// ---- the op -------------------------------------------------------------------------------------

namespace {

// Checks the tables and the offset, and returns the layout of x (*, T, W) with the first
// `rotated_parts` of `parts` equal parts of W rotated.
RotaryLayout layout(const std::string& where, const Tensor& x, const Tensor& cos, const Tensor& sin,
                    std::int64_t offset, std::size_t parts, std::size_t rotated_parts,
                    RotaryPairs pairs) {
  check<ShapeError>(cos.dim() == 2 && cos.shape()[1] >= 1 && sin.shape() == cos.shape(), where,
                    ": expected cos and sin tables of the same shape (max_len, head_dim / 2), got ",
                    cos.shape(), " and ", sin.shape());
  check<ValueError>(!cos.requires_grad() && !sin.requires_grad(), where,
                    ": expected cos and sin tables that do not require grad (they are constants "
                    "and receive no gradient)");
  check<ValueError>(offset >= 0, where, ": expected offset >= 0, got ", offset);
  const std::size_t half = cos.shape()[1], head_dim = 2 * half, max_len = cos.shape()[0];
  const Shape& s = x.shape();
  const std::size_t T = s.size() >= 2 ? s[s.size() - 2] : 0, W = s.empty() ? 0 : s.back();
  const std::size_t C = W / parts;
  check<ShapeError>(s.size() >= 2 && W % parts == 0 && C % head_dim == 0, where, ": expected ",
                    parts == 1 ? "x of shape (*, T, C)" : "qkv of shape (B, T, 3C)",
                    " with C a multiple of head_dim ", head_dim, ", got ", s);
  check<ShapeError>(std::size_t(offset) + T <= max_len, where,
                    ": expected positions offset + T = ", offset, " + ", T, " <= max_len ", max_len,
                    " of the tables, got ", std::size_t(offset) + T,
                    "; build the tables with a larger max_len");
  const std::size_t outer = T * W == 0 ? 0 : x.numel() / (T * W);
  return RotaryLayout{
      outer, T, W, rotated_parts * C, half, std::size_t(offset), pairs == RotaryPairs::halves};
}

Tensor apply(const char* op, const Tensor& x, const Tensor& cos, const Tensor& sin,
             const RotaryLayout& l) {
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<rotary_forward>();
  const auto backward_kernel = kernels::pick<rotary_backward>();
  Array out = Array::from_shape(x.shape());
  forward(x.data().data(), cos.data().data(), sin.data().data(), out.data(), l);
  Tensor y(std::move(out));
  autograd::record(op, y, {x}, /*saved=*/{cos, sin},
                   [x = x.edge(), cos, sin, l, op, backward_kernel](Array dy) {
                     Array dx = Array::from_shape(dy.shape());
                     backward_kernel(dy.data(), cos.data().data(), sin.data().data(), dx.data(), l);
                     x.accumulate_grad(std::move(dx), op);
                   });
  return y;
}
}  // namespace

RotaryTable rotary_table(std::int64_t head_dim, std::int64_t max_len, double base) {
  check<ValueError>(
      head_dim >= 2 && head_dim % 2 == 0,
      "rotary_table: expected an even head_dim >= 2 (the columns rotate in pairs), got ", head_dim);
  check<ValueError>(max_len >= 1, "rotary_table: expected max_len >= 1, got ", max_len);
  check<ValueError>(base > 0.0 && std::isfinite(base),
                    "rotary_table: expected a finite base > 0, got ", base);
  const auto half = std::size_t(head_dim / 2), n = std::size_t(max_len);
  RotaryTable table{Array::from_shape({n, half}), Array::from_shape({n, half})};
  for (std::size_t p = 0; p < half; ++p) {
    const double theta = std::pow(base, -2.0 * double(p) / double(head_dim));
    for (std::size_t m = 0; m < n; ++m) {
      const double angle = double(m) * theta;
      table.cos(m, p) = static_cast<float>(std::cos(angle));
      table.sin(m, p) = static_cast<float>(std::sin(angle));
    }
  }
  return table;
}

RotaryTable rotary_table(std::span<const float> inv_freq, std::int64_t max_len) {
  check<ValueError>(!inv_freq.empty(), "rotary_table: expected at least one frequency, got none");
  check<ValueError>(max_len >= 1, "rotary_table: expected max_len >= 1, got ", max_len);
  const std::size_t half = inv_freq.size(), n = std::size_t(max_len);
  for (std::size_t p = 0; p < half; ++p)
    check<ValueError>(std::isfinite(inv_freq[p]), "rotary_table: expected finite frequencies, got ",
                      inv_freq[p], " at ", p);
  RotaryTable table{Array::from_shape({n, half}), Array::from_shape({n, half})};
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t p = 0; p < half; ++p) {
      const float angle = float(m) * inv_freq[p];  // rounded to float32, as transformers' is
      table.cos(m, p) = static_cast<float>(std::cos(double(angle)));
      table.sin(m, p) = static_cast<float>(std::sin(double(angle)));
    }
  return table;
}

Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin, std::int64_t offset,
                        RotaryPairs pairs) {
  const RotaryLayout l =
      layout(autograd::where("rotary_embedding"), x, cos, sin, offset, 1, 1, pairs);
  return apply("rotary_embedding", x, cos, sin, l);
}

Tensor rotary_embedding_qkv(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                            std::int64_t offset, RotaryPairs pairs,
                            std::optional<std::int64_t> n_kv_head) {
  const std::string where = autograd::where("rotary_embedding_qkv");
  if (!n_kv_head) {
    check<ShapeError>(qkv.dim() == 3, where, ": expected qkv of shape (B, T, 3C), got ",
                      qkv.shape());
    return apply("rotary_embedding_qkv", qkv, cos, sin,
                 layout(where, qkv, cos, sin, offset, 3, 2, pairs));
  }
  // Grouped-query attention: whole heads of head_dim, the last 2 n_kv_head of them keys and values.
  check<ValueError>(*n_kv_head >= 1, where, ": expected n_kv_head >= 1, got ", *n_kv_head);
  if (cos.dim() != 2 || cos.shape()[1] == 0) layout(where, qkv, cos, sin, offset, 1, 1, pairs);
  const std::size_t kv = std::size_t(*n_kv_head), head_dim = 2 * cos.shape()[1];
  const std::size_t W = qkv.dim() == 3 ? qkv.shape()[2] : 0;
  check<ShapeError>(qkv.dim() == 3 && W % head_dim == 0 && W / head_dim >= 3 * kv, where,
                    ": expected qkv of shape (B, T, (n_head + 2 n_kv_head) head_dim) with "
                    "n_head >= n_kv_head = ",
                    kv, " and head_dim ", head_dim, ", got ", qkv.shape());
  return apply("rotary_embedding_qkv", qkv, cos, sin,
               layout(where, qkv, cos, sin, offset, W / head_dim, W / head_dim - kv, pairs));
}

}  // namespace tapegrad::ops
