// src/kernels/gelu.cpp
//
// GELU's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths is the reference kernels' (src/ops/activation.cpp); what differs
// is how it runs:
// - erf_f32 and exp_f32 (inline, branch-free) instead of the C library's erff and expf, which are
//   calls no loop around them can vectorise: the loops below run 8 or 16 elements at a time.
// - The erf form's derivative reuses the exp(-x^2 / 2) that erf_f32 computes for its large
//   branch. The tanh form goes through r = sigmoid(2u) = 1 / (1 + exp(-2u)): 1 + tanh u = 2r and
//   1 - tanh^2 u = 4 r (1 - r), so y = x * r, no 1 - tanh(u) ever cancels digits (u near 0 or very
//   negative), and exp(-2u) = inf (x -> -inf) gives r = 0, not inf / inf.
// - The erf form keeps PyTorch's GeluKernel order of operations: y = (x * 0.5) * (1 + erf).
// - Threads: large tensors are split over the pool, each element computed by one thread in the
//   same way, so the result does not depend on the thread count.
#include <cstddef>
#include <numbers>

#include "erf_f32.hpp"
#include "exp_f32.hpp"
#include "../core/parallel.hpp"
#include "../ops/gelu_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/gelu.cpp is compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

constexpr float kSqrtHalf = static_cast<float>(std::numbers::sqrt2 / 2.0);  // 1/sqrt(2)
constexpr float kInvSqrt2Pi =
    static_cast<float>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);  // 1/sqrt(2 pi)
constexpr float kSqrt2OverPi =
    static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2/pi)
constexpr float kKappa = 0.044715f;
// Elements worth a thread: a GELU costs a few nanoseconds per element, waking a thread several
// microseconds.
constexpr std::size_t kGrain = std::size_t{1} << 14;

// r = sigmoid(2u) of the tanh form, u = sqrt(2/pi) (x + kappa x^3).
inline float tanh_form_r(float x) {
  const float u = kSqrt2OverPi * (x + kKappa * (x * x * x));
  return 1.0f / (1.0f + detail::exp_f32(-2.0f * u));
}

void forward_tanh(const float* x, float* y, float* d, std::size_t first, std::size_t last) {
  if (!d) {
    for (std::size_t i = first; i < last; ++i) y[i] = x[i] * tanh_form_r(x[i]);
    return;
  }
  for (std::size_t i = first; i < last; ++i) {
    const float r = tanh_form_r(x[i]);
    const float inner_derivative = kSqrt2OverPi * (1.0f + 3.0f * kKappa * (x[i] * x[i]));
    y[i] = x[i] * r;
    d[i] = r + 2.0f * x[i] * r * (1.0f - r) *
                   inner_derivative;  // 0.5 (1 + tanh) + 0.5 x (1 - tanh^2) u'
  }
}

void forward_erf(const float* x, float* y, float* d, std::size_t first, std::size_t last) {
  if (!d) {
    for (std::size_t i = first; i < last; ++i)
      y[i] = (x[i] * 0.5f) * (1.0f + detail::erf_f32(x[i] * kSqrtHalf));
    return;
  }
  for (std::size_t i = first; i < last; ++i) {
    float gauss;  // exp(-x^2 / 2), which erf_f32 computes anyway
    const float erf = detail::erf_f32(x[i] * kSqrtHalf, gauss);
    const float cdf = 0.5f * (1.0f + erf);
    const float pdf = kInvSqrt2Pi * gauss;
    y[i] = (x[i] * 0.5f) * (1.0f + erf);
    d[i] = cdf + x[i] * pdf;
  }
}

// The formulas: gelu_forward's.
void forward(const float* x, float* y, float* d, std::size_t n, bool tanh_form) {
  detail::parallel_for(n, kGrain, [&](std::size_t first, std::size_t last) {
    if (tanh_form)
      forward_tanh(x, y, d, first, last);
    else
      forward_erf(x, y, d, first, last);
  });
}

void backward(float* dy, const float* d, std::size_t n) {
  // one multiplication per element: a thread pays for itself only on larger chunks
  detail::parallel_for(n, kGrain * 8, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) dy[i] = dy[i] * d[i];
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::gelu_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::gelu_backward, backward);
