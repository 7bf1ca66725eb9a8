// src/ops/dropout.cpp
//
// Inverted dropout (SPEC 2.7). x: any shape; the mask has x's shape. In training each element
// draws one u24 from the generator, in row-major order, and is kept iff u >= p. Kept elements
// are scaled by 1 / (1 - p) so that E[y] = x: evaluation then needs no rescaling, which is why
// eval mode is the identity. Backward reads only the mask (not x), so nothing is saved; it scales
// the incoming gradient in place (the tape drops it afterwards) and hands that buffer on.
// add_rows_dropout is the same op fused with the addition of a row table before it (what
// PositionalEncoding does), one pass instead of two and bit for bit the same.
#include "tapegrad/ops/dropout.hpp"

#include <cmath>
#include <memory>

#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

namespace {
constexpr std::size_t kGrain = std::size_t{1} << 16;   // elements worth a thread in these loops

// y[i] = x[i] * (keep[i] ? scale : 0): the mask applied. Separate in-place / out-of-place loops,
// so that both vectorise (x == y would defeat the alias check). Each loop body copies scale into
// a local first: read through the lambda's reference, it might alias y[i], and the compiler would
// then reload it after every store and not vectorise at all (4x slower, seen in perf).
void apply_mask(const float* x, const std::uint8_t* keep, float scale, float* y, std::size_t n) {
  detail::parallel_for(n, kGrain, [&](std::size_t first, std::size_t last) {
    const float s = scale;
    for (std::size_t i = first; i < last; ++i) y[i] = x[i] * (keep[i] ? s : 0.0f);
  });
}
void apply_mask_(float* y, const std::uint8_t* keep, float scale, std::size_t n) {
  detail::parallel_for(n, kGrain, [&](std::size_t first, std::size_t last) {
    const float s = scale;
    for (std::size_t i = first; i < last; ++i) y[i] = y[i] * (keep[i] ? s : 0.0f);
  });
}

// y[b, i] = x[b, i] + rows[i]   for b < B, i < n (one (L, D) slice)
void add_rows(const float* x, const float* rows, float* y, std::size_t B, std::size_t n) {
  detail::parallel_for(B * n, kGrain, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last;) {          // [first, last) in pieces that stay in one slice
      const std::size_t r = i % n, len = std::min(n - r, last - i);
      for (std::size_t j = 0; j < len; ++j) y[i + j] = x[i + j] + rows[r + j];
      i += len;
    }
  });
}

// y[i] = (x[i] + rows[i]) * (keep[i] ? scale : 0)   for one (L, D) slice of n elements.
// The unfused form is z = x + rows (rounded to float), then dropout(z): the same two roundings.
void add_rows_apply_mask(const float* x, const float* rows, const std::uint8_t* keep, float scale, float* y,
                         std::size_t n) {
  detail::parallel_for(n, kGrain, [&](std::size_t first, std::size_t last) {
    const float s = scale;                              // a local: see apply_mask
    for (std::size_t i = first; i < last; ++i) y[i] = (x[i] + rows[i]) * (keep[i] ? s : 0.0f);
  });
}

// The mask of SPEC 2.7 for n elements: u24 >= p, one draw each, row-major; p == 1 keeps nothing
// and draws nothing.
void draw_mask(std::uint8_t* keep, std::size_t n, double p, Generator& gen) {
  if (p == 1.0)
    std::fill(keep, keep + n, std::uint8_t{0});
  else
    gen.keep_mask(keep, n, p);
}

std::shared_ptr<xt::xarray<std::uint8_t>> new_mask(const Shape& shape) {
  return std::make_shared<xt::xarray<std::uint8_t>>(xt::xarray<std::uint8_t>::from_shape(shape));
}

// scale = 1.0f / float(1 - p): PyTorch divides a 0/1 float mask by (1 - p), which rounds the same way.
float keep_scale(double p) { return p == 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - p); }
}  // namespace

void check_dropout_probability(double p) {
  // NaN fails both comparisons: rejected, unlike PyTorch's `p < 0 or p > 1` (SPEC section 3).
  check<ValueError>(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen, bool inplace,
               xt::xarray<std::uint8_t>* mask_out) {
  // m[i] = (u[i] >= p) ? scale : 0        scale = 1.0f / float(1 - p)
  // y = x * m                             dx = dy * m
  // p == 1 keeps nothing and draws nothing: y = x * 0, so NaN and Inf inputs give NaN, as in PyTorch.
  check_dropout_probability(p);
  if (!training || p == 0.0 || x.numel() == 0) return x;   // the same tensor, no draw, no entry
  if (inplace && x.is_leaf() && x.requires_grad() && autograd::grad_enabled())
    fail<AutogradError>("a leaf Variable that requires grad is being used in an in-place operation. | ",
                        autograd::where("dropout"), ": ", x.describe(),
                        "; use inplace=false, or run it under NoGradGuard if it is not part of the model");

  const std::size_t n = x.numel();
  const auto mask = new_mask(x.shape());
  draw_mask(mask->data(), n, p, gen);
  const float scale = keep_scale(p);

  // In place, the result lives in x's storage (one version bump). The tape entry needs an output
  // distinct from its input, so when the op is recorded the result is a new handle on that same
  // storage and version counter (what detach() gives); otherwise it is x itself.
  Tensor y;
  if (inplace) {
    apply_mask_(x.mutable_data().data(), mask->data(), scale, n);
    y = autograd::should_record({x}) ? x.detach() : x;
  } else {
    Array out = Array::from_shape(x.shape());
    apply_mask(x.data().data(), mask->data(), scale, out.data(), n);
    y = Tensor(std::move(out));
  }
  if (mask_out != nullptr) *mask_out = *mask;
  autograd::record("dropout", y, {x}, /*saved=*/{}, [x, mask, scale](Array dy) {
    apply_mask_(dy.data(), mask->data(), scale, dy.size());   // dx = dy * m, in dy's buffer
    x.accumulate_grad(std::move(dy), "dropout");
  });
  return y;
}

Tensor add_rows_dropout(const Tensor& x, const Array& rows, double p, bool training, Generator& gen,
                        SharedMask* mask_out) {
  // z[b, l, :] = x[b, l, :] + rows[l, :]                rows: the first L rows of a (..., R, D) table
  // y = z * m,  m[i] = (u[i] >= p) ? scale : 0         exactly dropout(z): the same draws and roundings
  // dx = dy * m                                        (rows is a constant: it receives nothing)
  const std::string where = autograd::where("add_rows_dropout");
  check_dropout_probability(p);
  const Shape& s = x.shape();
  const std::size_t table_rows = rows.dimension() >= 2 ? rows.size() / rows.shape().back() : 0;
  const bool fits = s.size() == 3 && rows.dimension() >= 2 && rows.shape().back() == s[2] && table_rows >= s[1];
  if (!fits)
    fail<ShapeError>(where, ": expected x of shape (B, L, D) and a table of shape (..., R, D) with R >= L, got ", s,
                     " and ", rows.shape());
  const std::size_t B = s[0], n = s[1] * s[2];
  Array out = Array::from_shape(s);
  const bool identity = !training || p == 0.0 || x.numel() == 0;
  if (identity) {                                       // y = x + rows: no draw
    add_rows(x.data().data(), rows.data(), out.data(), B, n);
    Tensor y(std::move(out));
    autograd::record("add_rows", y, {x}, {}, [x](Array dy) { x.accumulate_grad(std::move(dy), "add_rows"); });
    return y;
  }
  const auto mask = new_mask(s);
  const float scale = keep_scale(p);
  for (std::size_t b = 0; b < B; ++b) {                 // a slice's mask is still in cache when applied
    const std::size_t at = b * n;
    draw_mask(mask->data() + at, n, p, gen);
    add_rows_apply_mask(x.data().data() + at, rows.data(), mask->data() + at, scale, out.data() + at, n);
  }
  Tensor y(std::move(out));
  if (mask_out != nullptr) *mask_out = mask;
  autograd::record("add_rows_dropout", y, {x}, /*saved=*/{}, [x, mask, scale](Array dy) {
    apply_mask_(dy.data(), mask->data(), scale, dy.size());
    x.accumulate_grad(std::move(dy), "add_rows_dropout");
  });
  return y;
}

}  // namespace tapegrad::ops
