// src/kernels/dropout.cpp
//
// Dropout's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths is the reference kernels' (src/ops/dropout.cpp), the same mask and
// the same bits; what differs is how it runs:
// - The multipliers are computed a chunk of 256 at a time (DropoutMask, dropout_mask.hpp: 16
//   Philox blocks per step, vectorised with AVX2), right where they are applied, and never stored.
// - Threads: elements are split over the pool; each thread computes the multipliers of its own
//   elements, which depend on nothing but (seed, call, e), so the thread count changes nothing.
#include <algorithm>

#include "../core/parallel.hpp"
#include "../ops/dropout_kernels.hpp"
#include "../ops/dropout_mask.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/dropout.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// Elements worth a thread: a multiplier costs about a nanosecond (ten Philox rounds per 4), so
// 32 Ki elements are some 30 us of work, against several (on a loaded machine, many more) to wake
// a worker. W1-S's 16 x 32 x 64 activations stay on one thread, as in the hand-written floor.
constexpr std::size_t kGrain = std::size_t{1} << 15;

// The formula: dropout_apply's. Separate in-place / out-of-place loops, so that both
// vectorise (x == y would defeat the alias check).
void apply(std::uint64_t seed, std::uint64_t call, double p, const float* x, float* y,
           std::size_t n) {
  const ops::DropoutMask mask{seed, call, p};
  detail::parallel_for(n, kGrain, [&](std::size_t begin, std::size_t end) {
    mask.chunks(begin, end, [&](std::size_t first, std::size_t len, const float* m) {
      float* ys = y + first;
      if (x == y) {
        for (std::size_t i = 0; i < len; ++i) ys[i] = ys[i] * m[i];
      } else {
        const float* xs = x + first;
        for (std::size_t i = 0; i < len; ++i) ys[i] = xs[i] * m[i];
      }
    });
  });
}

// The formula: dropout_add_rows_apply's. The unfused form is z = x + rows (rounded to float), then
// dropout(z): the same two roundings.
void add_rows_apply(std::uint64_t seed, std::uint64_t call, double p, const float* x,
                    const float* rows, float* y, std::size_t B, std::size_t n) {
  const ops::DropoutMask mask{seed, call, p};
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

// The formula: dropout_add_rows's. An addition is cheap: a thread pays for itself on larger pieces
// than a multiplier's.
void add_rows(const float* x, const float* rows, float* y, std::size_t B, std::size_t n) {
  detail::parallel_for(B * n, kGrain * 2, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last;) {  // [first, last) in pieces that stay in one slice
      const std::size_t r = i % n, len = std::min(n - r, last - i);
      for (std::size_t j = 0; j < len; ++j) y[i + j] = x[i + j] + rows[r + j];
      i += len;
    }
  });
}

// The formula: dropout_keep's.
void mask(std::uint64_t seed, std::uint64_t call, double p, std::uint8_t* keep, std::size_t n) {
  const ops::DropoutMask multipliers{seed, call, p};
  multipliers.chunks(0, n, [&](std::size_t first, std::size_t len, const float* m) {
    for (std::size_t i = 0; i < len; ++i) keep[first + i] = m[i] != 0.0f;
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::dropout_apply, apply);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::dropout_add_rows_apply, add_rows_apply);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::dropout_add_rows, add_rows);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::dropout_keep, mask);
