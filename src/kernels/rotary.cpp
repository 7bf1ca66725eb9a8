// src/kernels/rotary.cpp
//
// Rotary position embeddings' fast kernels, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The maths is the reference kernels'
// (src/ops/rotary.cpp), in the same float operations (the backward is the forward's loop with sin
// negated: x1 * (-s) is -(x1 s) exactly), so every set gives the reference's bits. What differs:
// one loop for both directions, pointers walked per row, copied columns copied once, and rows split
// over the threads (they are independent).
#include <algorithm>

#include "../core/parallel.hpp"
#include "../ops/rotary_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/rotary.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// out = R x (sign 1) or R^T x (sign -1), for every row.
void rotate(const float* x, float* out, const RotaryLayout& l, const float* cos, const float* sin,
            float sign) {
  const std::size_t grain = detail::rows_grain(l.W);
  detail::parallel_for(l.outer * l.T, grain, [&](std::size_t first, std::size_t last) {
    // the sizes in registers: the stores to out could otherwise alias them
    const std::size_t T = l.T, W = l.W, rotated = l.rotated, half = l.half;
    const bool halves = l.halves;
    for (std::size_t row = first; row < last; ++row) {
      const std::size_t m = l.offset + row % T;
      const float* c = cos + m * half;
      const float* s = sin + m * half;
      const float* a = x + row * W;
      float* b = out + row * W;
      if (halves)  // pair p is (p, p + half): two contiguous runs, which vectorise
        for (std::size_t head = 0; head < rotated; head += 2 * half)
          for (std::size_t p = 0; p < half; ++p) {
            const float x0 = a[head + p], x1 = a[head + half + p], sp = sign * s[p];
            b[head + p] = x0 * c[p] - x1 * sp;
            b[head + half + p] = x0 * sp + x1 * c[p];
          }
      else
        for (std::size_t head = 0; head < rotated; head += 2 * half)
          for (std::size_t p = 0; p < half; ++p) {
            const float x0 = a[head + 2 * p], x1 = a[head + 2 * p + 1], sp = sign * s[p];
            b[head + 2 * p] = x0 * c[p] - x1 * sp;
            b[head + 2 * p + 1] = x0 * sp + x1 * c[p];
          }
      std::copy(a + rotated, a + W, b + rotated);
    }
  });
}

// The formula: rotary_forward's.
void forward(const float* x, const float* cos, const float* sin, float* y, const RotaryLayout& l) {
  rotate(x, y, l, cos, sin, 1.0f);
}

// The formula: rotary_backward's.
void backward(const float* dy, const float* cos, const float* sin, float* dx,
              const RotaryLayout& l) {
  rotate(dy, dx, l, cos, sin, -1.0f);
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::rotary_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::rotary_backward, backward);
