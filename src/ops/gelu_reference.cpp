// src/ops/gelu_reference.cpp
//
// GELU's reference kernels: the formulas as plain loops with the C library's erf, exp and tanh
// (docs/kernels.md: read these first). The fast kernels (gelu_fast.cpp) use tapegrad's
// vectorisable erf_f32 and exp_f32 (within 1.24 and 1 ulp of the exact values) and write the tanh
// form through a sigmoid; the results differ by a few float roundings (docs/semantics.md#kernel-sets).
#include <cmath>
#include <numbers>

#include "gelu_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// erf form:   y = x * Phi(x),  Phi(x) = 0.5 (1 + erf(x / sqrt 2))
//             y' = Phi(x) + x * phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
// tanh form:  y = 0.5 x (1 + tanh u),  u = sqrt(2/pi) (x + 0.044715 x^3)
//             y' = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,  du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
void forward(const float* x, float* y, float* d, std::size_t n, bool tanh_form) {
  const double sqrt_half = std::numbers::sqrt2 / 2,
               inv_sqrt_2pi = std::numbers::inv_sqrtpi * sqrt_half,
               sqrt_2_over_pi = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, kappa = 0.044715;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!tanh_form) {
      const float cdf = 0.5f * (1.0f + std::erf(v * float(sqrt_half)));
      y[i] = v * cdf;
      if (d) d[i] = cdf + v * float(inv_sqrt_2pi) * std::exp(-0.5f * v * v);
    } else {
      const float t = std::tanh(float(sqrt_2_over_pi) * (v + float(kappa) * v * v * v));
      y[i] = 0.5f * v * (1.0f + t);
      const float du = float(sqrt_2_over_pi) * (1.0f + 3.0f * float(kappa) * v * v);
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
