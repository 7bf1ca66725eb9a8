// src/ops/dropout.cpp
//
// Inverted dropout. x: any shape; the mask has x's shape and is never stored: element e's
// multiplier m[e] = keep(e) ? scale : 0 is computed from the Philox stream (src/core/philox.hpp)
// right where it is applied, in forward and again in backward, by the kernels:
// the reference kernels below (read them first) and their fast versions in
// src/kernels/dropout.cpp, picked for the CPU by kernels::pick (docs/kernels.md).
// Kept elements are scaled by 1 / (1 - p) so that E[y] = x: evaluation then needs no rescaling,
// which is why eval mode is the identity. Backward reads neither x nor a mask, so nothing is
// saved; it scales the incoming gradient in place and hands that buffer on.
// add_rows_dropout is the same op fused with the addition of a row table before it (what
// PositionalEncoding does), one pass instead of two and bit for bit the same.
#include "tapegrad/ops/dropout.hpp"

#include <cmath>
#include <memory>

#include "dropout_mask.hpp"
#include "dropout_kernels.hpp"
#include "tapegrad/autograd/checkpoint.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// One element at a time, each multiplier from its own Philox block. The fast versions draw the
// same numbers a chunk at a time (DropoutMask) and split the elements over threads: the same mask
// and the same bits.

namespace {
// m[e] = keep(e) ? 1.0f / float(1 - p) : 0
// keep(e) = (x >> 8) >= ceil(p 2^24)
//   x = word e % 4 of philox(key = seed, counter = (e / 4, call))
float m(std::uint64_t seed, std::uint64_t call, double p, std::size_t e) {
  return ops::dropout_multiplier(seed, call, p, e);
}
}  // namespace

// y[e] = x[e] * m[e]   (forward, and backward with x = y = the gradient)
void dropout_apply(std::uint64_t seed, std::uint64_t call, double p, const float* x, float* y,
                   std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) y[e] = x[e] * m(seed, call, p, e);
}

// y[b, i] = (x[b, i] + rows[i]) * m[b n + i]
void dropout_add_rows_apply(std::uint64_t seed, std::uint64_t call, double p, const float* x,
                            const float* rows, float* y, std::size_t B, std::size_t n) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i)
      y[b * n + i] = (x[b * n + i] + rows[i]) * m(seed, call, p, b * n + i);
}

// y[b, i] = x[b, i] + rows[i]   (add_rows_apply when nothing is dropped)
void dropout_add_rows(const float* x, const float* rows, float* y, std::size_t B, std::size_t n) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i) y[b * n + i] = x[b * n + i] + rows[i];
}

// keep[e] = m[e] != 0
void dropout_keep(std::uint64_t seed, std::uint64_t call, double p, std::uint8_t* keep,
                  std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) keep[e] = m(seed, call, p, e) != 0.0f;
}

// ---- the op -------------------------------------------------------------------------------------

namespace {
// In place on a leaf that requires grad (with grad mode on) would change a parameter behind the
// tape's back: refused, as PyTorch does.
void check_inplace(const Tensor& x, bool inplace) {
  if (inplace && x.is_leaf() && x.requires_grad() && autograd::grad_enabled())
    fail<AutogradError>(
        "a leaf Variable that requires grad is being used in an in-place operation. | ",
        autograd::where("dropout"), ": ", x.describe(),
        "; use inplace=false, or run it under NoGradGuard if it is not part of the model");
}
}  // namespace

void check_dropout_probability(double p) {
  // NaN fails both comparisons: rejected, unlike PyTorch's `p < 0 or p > 1`, which lets it through.
  check<ValueError>(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ",
                    p);
}

xt::xarray<std::uint8_t> dropout_mask(const Shape& shape, double p, DropoutStream stream) {
  check_dropout_probability(p);
  auto keep = xt::xarray<std::uint8_t>::from_shape(shape);
  kernels::pick<dropout_keep>()(stream.seed, stream.call, p, keep.data(), keep.size());
  return keep;
}

Tensor dropout(const Tensor& x, double p, bool training, DropoutStream stream, bool inplace) {
  // m[e] = keep(e) ? scale : 0     keep(e) = u(seed, call, e) >= p     scale = 1.0f / float(1 - p)
  // y = x * m                      dx = dy * m   (the mask computed again, from the stream)
  // p == 1 keeps nothing: y = x * 0, so NaN and Inf inputs give NaN, as in PyTorch.
  check_dropout_probability(p);
  if (!training || p == 0.0 || x.numel() == 0) return x;  // the same tensor, no entry
  check_inplace(x, inplace);

  const std::size_t n = x.numel();
  // The set in use's kernel, picked once: backward runs the same set's.
  const auto apply = kernels::pick<dropout_apply>();
  // In place, the result lives in x's storage (one version bump). The tape entry needs an output
  // distinct from its input, so when the op is recorded the result is a new handle on that same
  // storage and version counter (what detach() gives); otherwise it is x itself.
  Tensor y;
  if (inplace) {
    float* data = x.mutable_data().data();
    apply(stream.seed, stream.call, p, data, data, n);
    y = autograd::should_record({x}) ? x.detach() : x;
  } else {
    Array out = Array::from_shape(x.shape());
    apply(stream.seed, stream.call, p, x.data().data(), out.data(), n);
    y = Tensor(std::move(out));
  }
  autograd::record("dropout", y, {x}, /*saved=*/{}, [x = x.edge(), stream, p, apply](Array dy) {
    apply(stream.seed, stream.call, p, dy.data(), dy.data(), dy.size());  // dx = dy * m
    x.accumulate_grad(std::move(dy), "dropout");
  });
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen, bool inplace) {
  check_dropout_probability(p);
  if (!training || p == 0.0 || x.numel() == 0) return x;  // no draw either
  check_inplace(x, inplace);                              // refused before drawing
  return dropout(x, p, training, draw_stream(&gen), inplace);
}

DropoutStream draw_stream(Generator* gen) {
  const autograd::RandomStream s = autograd::take_stream([gen] {
    return autograd::RandomStream{(gen != nullptr ? *gen : *default_generator()).next_u64(), 0};
  });
  return {s.seed, s.call};
}

Tensor add_rows_dropout(const Tensor& x, const Array& rows, double p, bool training,
                        DropoutStream stream) {
  // z[b, l, :] = x[b, l, :] + rows[l, :]     rows: the first L rows of a (..., R, D) table
  // y = z * m                               exactly dropout(z, p, training, stream)
  // dx = dy * m                             (rows is a constant: it receives nothing)
  const std::string where = autograd::where("add_rows_dropout");
  check_dropout_probability(p);
  const Shape& s = x.shape();
  const std::size_t table_rows = rows.dimension() >= 2 ? rows.size() / rows.shape().back() : 0;
  const bool fits =
      s.size() == 3 && rows.dimension() >= 2 && rows.shape().back() == s[2] && table_rows >= s[1];
  if (!fits)
    fail<ShapeError>(
        where, ": expected x of shape (B, L, D) and a table of shape (..., R, D) with R >= L, got ",
        s, " and ", rows.shape());
  const std::size_t B = s[0], n = s[1] * s[2];
  Array out = Array::from_shape(s);
  const bool identity = !training || p == 0.0 || x.numel() == 0;
  const auto apply = kernels::pick<dropout_apply>();
  if (identity) {  // y = x + rows
    kernels::pick<dropout_add_rows>()(x.data().data(), rows.data(), out.data(), B, n);
    Tensor y(std::move(out));
    autograd::record("add_rows", y, {x}, {},
                     [x = x.edge()](Array dy) { x.accumulate_grad(std::move(dy), "add_rows"); });
    return y;
  }
  kernels::pick<dropout_add_rows_apply>()(stream.seed, stream.call, p, x.data().data(), rows.data(),
                                          out.data(), B, n);
  Tensor y(std::move(out));
  autograd::record("add_rows_dropout", y, {x}, /*saved=*/{},
                   [x = x.edge(), stream, p, apply](Array dy) {
                     apply(stream.seed, stream.call, p, dy.data(), dy.data(), dy.size());
                     x.accumulate_grad(std::move(dy), "add_rows_dropout");
                   });
  return y;
}

}  // namespace tapegrad::ops
