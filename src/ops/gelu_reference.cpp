// src/ops/gelu_reference.cpp
//
// GELU's reference kernels: the formulas as plain loops with the C library's erf, exp and tanh
// (docs/kernels.md: read these first). The fast kernels (gelu_fast.cpp) use tapegrad's
// vectorisable erf_f32 and exp_f32 (within 1.24 and 1 ulp of the exact values) and write the tanh
// form through a sigmoid; the results differ by a few float roundings, up to 40 in the tanh
// form's derivative (docs/semantics.md#kernel-sets).
#include <cmath>
#include <numbers>

#include "gelu_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

constexpr auto kSqrtHalf = float(std::numbers::sqrt2 / 2);                            // 1/sqrt(2)
constexpr auto kInvSqrt2Pi = float(std::numbers::inv_sqrtpi / std::numbers::sqrt2);   // 1/sqrt(2pi)
constexpr auto kSqrt2OverPi = float(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2/pi)
constexpr float kKappa = 0.044715f;

// erf form:   y = x Phi(x),  Phi(x) = 0.5 (1 + erf(x / sqrt 2))
//             y' = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
// tanh form:  y = 0.5 x (1 + tanh u),  u = sqrt(2/pi) (x + 0.044715 x^3)
//             y' = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u',  u' = sqrt(2/pi) (1 + 0.134145 x^2)
void forward(const float* x, float* y, float* d, std::size_t n, bool tanh_form) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!tanh_form) {
      const float cdf = 0.5f * (1.0f + std::erf(v * kSqrtHalf));
      y[i] = v * cdf;
      if (d) d[i] = cdf + v * kInvSqrt2Pi * std::exp(-0.5f * v * v);
    } else {
      const float t = std::tanh(kSqrt2OverPi * (v + kKappa * v * v * v));
      const float du = kSqrt2OverPi * (1.0f + 3.0f * kKappa * v * v);
      y[i] = 0.5f * v * (1.0f + t);
      if (d) d[i] = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
    }
  }
}

// dx = dy * y'   (y' saved by the forward)
void backward(float* dy, const float* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dy[i] = dy[i] * d[i];
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const GeluKernels gelu{forward, backward};

}  // namespace tapegrad::kernels::reference
