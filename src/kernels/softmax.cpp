// src/kernels/softmax.cpp
//
// softmax's and log_softmax's fast kernels, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The maths is the reference kernels'
// (src/ops/softmax.cpp); what differs:
// - e^x is exp_f32 (src/kernels/exp_f32.hpp), inline arithmetic that vectorises, where std::exp is
//   a library call, one element at a time;
// - the exponentials are written into y once and reused for the sum and the division;
// - rows along the last dimension (contiguous) get loops of their own, which compile to
//   unit-stride vector code.
// The sums are in double, in order, as in the reference.
#include <algorithm>
#include <cmath>

#include "exp_f32.hpp"
#include "../ops/softmax_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error \
    "src/kernels/softmax.cpp is compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// Calls f(offset, stride) for every row of (outer, n, inner): the row's elements sit at
// offset + k * stride, k < n. Contiguous rows (inner == 1) get their own loop, so that f is
// inlined with stride 1 known.
template <class F>
void for_each_row(std::size_t outer, std::size_t n, std::size_t inner, F&& f) {
  if (n == 0) return;
  if (inner == 1) {
    for (std::size_t o = 0; o < outer; ++o) f(o * n, std::size_t{1});
    return;
  }
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) f(o * n * inner + i, inner);
}

// The formula: softmax_forward's.
void forward(const float* x, float* y, std::size_t outer, std::size_t n, std::size_t inner,
             bool log) {
  for_each_row(outer, n, inner, [&](std::size_t at, std::size_t stride) {
    const float* xr = x + at;
    float* yr = y + at;
    float m = xr[0];
    for (std::size_t k = 1; k < n; ++k) m = std::max(m, xr[k * stride]);
    for (std::size_t k = 0; k < n; ++k)
      yr[k * stride] = detail::exp_f32(xr[k * stride] - m);  // SIMD when stride is 1
    double s = 0.0;
    for (std::size_t k = 0; k < n; ++k) s += yr[k * stride];
    if (log) {
      const auto log_s = static_cast<float>(std::log(s));
      for (std::size_t k = 0; k < n; ++k) yr[k * stride] = (xr[k * stride] - m) - log_s;
    } else {
      const auto sum = static_cast<float>(s);
      for (std::size_t k = 0; k < n; ++k) yr[k * stride] /= sum;
    }
  });
}

// The formula: softmax_backward's.
void softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer, std::size_t n,
                      std::size_t inner) {
  for_each_row(outer, n, inner, [&](std::size_t at, std::size_t stride) {
    double dot = 0.0;
    for (std::size_t k = 0; k < n; ++k)
      dot += double(dy[at + k * stride]) * double(y[at + k * stride]);
    const auto c = static_cast<float>(dot);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t j = at + k * stride;
      dx[j] = y[j] * (dy[j] - c);
    }
  });
}

// The formula: log_softmax_backward's.
void log_softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer,
                          std::size_t n, std::size_t inner) {
  for_each_row(outer, n, inner, [&](std::size_t at, std::size_t stride) {
    double total = 0.0;
    for (std::size_t k = 0; k < n; ++k) total += dy[at + k * stride];
    const auto c = static_cast<float>(total);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t j = at + k * stride;
      dx[j] = dy[j] - detail::exp_f32(y[j]) * c;
    }
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::softmax_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::softmax_backward, softmax_backward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::log_softmax_backward, log_softmax_backward);
