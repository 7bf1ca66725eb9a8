// src/ops/dropout.cpp
//
// Inverted dropout. x: any shape; the mask has x's shape and is never stored: element e's
// multiplier m[e] = keep(e) ? scale : 0 is computed from the Philox stream (src/philox.hpp) a
// chunk of 256 elements at a time, right where it is applied, in forward and again in backward.
// Kept elements are scaled by 1 / (1 - p) so that E[y] = x: evaluation then needs no rescaling,
// which is why eval mode is the identity. Backward reads neither x nor a mask, so nothing is
// saved; it scales the incoming gradient in place and hands that buffer on.
// add_rows_dropout is the same op fused with the addition of a row table before it (what
// PositionalEncoding does), one pass instead of two and bit for bit the same.
// Threads (threads.hpp): elements are split over the threads; each computes the multipliers of its
// own elements, which depend on nothing but (seed, call, e), so the thread count changes nothing.
#include "tapegrad/ops/dropout.hpp"

#include <cmath>
#include <memory>

#include "../parallel.hpp"
#include "dropout_mask.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

namespace {
// Elements worth a thread: a multiplier costs about a nanosecond (ten Philox rounds per 4), so
// 32 Ki elements are some 30 us of work, against several (on a loaded machine, many more) to wake
// a worker. W1-S's 16 x 32 x 64 activations stay on one thread, as in the hand-written floor.
constexpr std::size_t kGrain = std::size_t{1} << 15;

// y[e] = x[e] * m[e] for e < n. Separate in-place / out-of-place loops, so that both vectorise
// (x == y would defeat the alias check).
void apply_mask(const DropoutMask& mask, const float* x, float* y, std::size_t n) {
  detail::parallel_for(n, kGrain, [&](std::size_t begin, std::size_t end) {
    mask.chunks(begin, end, [&](std::size_t first, std::size_t len, const float* m) {
      const float* xs = x + first;
      float* ys = y + first;
      for (std::size_t i = 0; i < len; ++i) ys[i] = xs[i] * m[i];
    });
  });
}
void apply_mask_(const DropoutMask& mask, float* y, std::size_t n) {
  detail::parallel_for(n, kGrain, [&](std::size_t begin, std::size_t end) {
    mask.chunks(begin, end, [&](std::size_t first, std::size_t len, const float* m) {
      float* ys = y + first;
      for (std::size_t i = 0; i < len; ++i) ys[i] = ys[i] * m[i];
    });
  });
}

// y[b, i] = x[b, i] + rows[i]   for b < B, i < n (one (L, D) slice)
void add_rows(const float* x, const float* rows, float* y, std::size_t B, std::size_t n) {
  detail::parallel_for(B * n, std::size_t{1} << 16, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last;) {  // [first, last) in pieces that stay in one slice
      const std::size_t r = i % n, len = std::min(n - r, last - i);
      for (std::size_t j = 0; j < len; ++j) y[i + j] = x[i + j] + rows[r + j];
      i += len;
    }
  });
}

// y[e] = (x[e] + rows[e % n]) * m[e] for e < B * n. The unfused form is z = x + rows (rounded to
// float), then dropout(z): the same two roundings.
void add_rows_apply_mask(const DropoutMask& mask, const float* x, const float* rows, float* y,
                         std::size_t B, std::size_t n) {
  detail::parallel_for(B * n, kGrain, [&](std::size_t begin, std::size_t end) {
    mask.chunks(begin, end, [&](std::size_t first, std::size_t len, const float* m) {
      for (std::size_t i = 0; i < len;) {  // pieces that stay in one slice
        const std::size_t e = first + i, r = e % n, piece = std::min(n - r, len - i);
        const float *xs = x + e, *rs = rows + r, *ms = m + i;
        float* ys = y + e;
        for (std::size_t j = 0; j < piece; ++j) ys[j] = (xs[j] + rs[j]) * ms[j];
        i += piece;
      }
    });
  });
}

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
  std::uint8_t* k = keep.data();
  const DropoutMask mask{stream, p};
  mask.chunks(0, keep.size(), [&](std::size_t first, std::size_t len, const float* m) {
    for (std::size_t i = 0; i < len; ++i) k[first + i] = m[i] != 0.0f;
  });
  return keep;
}

Tensor dropout(const Tensor& x, double p, bool training, DropoutStream stream, bool inplace) {
  // m[e] = keep(e) ? scale : 0      keep(e) = u(seed, call, e) >= p      scale = 1.0f / float(1 - p)
  // y = x * m                       dx = dy * m   (the mask computed again, from the stream)
  // p == 1 keeps nothing: y = x * 0, so NaN and Inf inputs give NaN, as in PyTorch.
  check_dropout_probability(p);
  if (!training || p == 0.0 || x.numel() == 0) return x;  // the same tensor, no entry
  check_inplace(x, inplace);

  const std::size_t n = x.numel();
  const DropoutMask mask{stream, p};
  // In place, the result lives in x's storage (one version bump). The tape entry needs an output
  // distinct from its input, so when the op is recorded the result is a new handle on that same
  // storage and version counter (what detach() gives); otherwise it is x itself.
  Tensor y;
  if (inplace) {
    apply_mask_(mask, x.mutable_data().data(), n);
    y = autograd::should_record({x}) ? x.detach() : x;
  } else {
    Array out = Array::from_shape(x.shape());
    apply_mask(mask, x.data().data(), out.data(), n);
    y = Tensor(std::move(out));
  }
  autograd::record("dropout", y, {x}, /*saved=*/{}, [x, mask](Array dy) {
    apply_mask_(mask, dy.data(), dy.size());  // dx = dy * m, in dy's buffer
    x.accumulate_grad(std::move(dy), "dropout");
  });
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen, bool inplace) {
  check_dropout_probability(p);
  if (!training || p == 0.0 || x.numel() == 0) return x;  // no draw either
  check_inplace(x, inplace);                              // refused before drawing
  return dropout(x, p, training, DropoutStream{gen.next_u64(), 0}, inplace);
}

Tensor add_rows_dropout(const Tensor& x, const Array& rows, double p, bool training,
                        DropoutStream stream) {
  // z[b, l, :] = x[b, l, :] + rows[l, :]                rows: the first L rows of a (..., R, D) table
  // y = z * m                                          exactly dropout(z, p, training, stream)
  // dx = dy * m                                        (rows is a constant: it receives nothing)
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
  if (identity) {  // y = x + rows
    add_rows(x.data().data(), rows.data(), out.data(), B, n);
    Tensor y(std::move(out));
    autograd::record("add_rows", y, {x}, {},
                     [x](Array dy) { x.accumulate_grad(std::move(dy), "add_rows"); });
    return y;
  }
  const DropoutMask mask{stream, p};
  add_rows_apply_mask(mask, x.data().data(), rows.data(), out.data(), B, n);
  Tensor y(std::move(out));
  autograd::record("add_rows_dropout", y, {x}, /*saved=*/{}, [x, mask](Array dy) {
    apply_mask_(mask, dy.data(), dy.size());
    x.accumulate_grad(std::move(dy), "add_rows_dropout");
  });
  return y;
}

}  // namespace tapegrad::ops
