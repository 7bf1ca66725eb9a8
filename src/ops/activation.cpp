// src/ops/activation.cpp
//
// GELU in PyTorch's two forms: the checks and the recording. The maths is in the reference
// kernels below (read them first); src/kernels/gelu.cpp has their fast versions, picked for the
// CPU by kernels::pick (docs/kernels.md). When the op is recorded, the forward pass also writes
// the derivative gelu'(x), kept for backward (one float per element), so backward is one
// multiplication instead of a second evaluation of erf.
//   "none":  y = x * Phi(x) = (x * 0.5) * (1 + erf(x / sqrt 2))       (PyTorch's GeluKernel)
//   "tanh":  y = 0.5 x (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
#include "tapegrad/ops/activation.hpp"

#include <cmath>
#include <memory>
#include <numbers>

#include "gelu_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// The formulas as plain loops with the C library's erf, exp and tanh. The fast versions use
// tapegrad's vectorisable erf_f32 and exp_f32 (within 1.24 and 1 ulp of the exact values) and
// write the tanh form through a sigmoid; the results differ by a few float roundings, up to 40 in
// the tanh form's derivative (docs/semantics.md#kernel-sets).

namespace {
constexpr auto kSqrtHalf = float(std::numbers::sqrt2 / 2);                            // 1/sqrt(2)
constexpr auto kInvSqrt2Pi = float(std::numbers::inv_sqrtpi / std::numbers::sqrt2);   // 1/sqrt(2pi)
constexpr auto kSqrt2OverPi = float(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2/pi)
constexpr float kKappa = 0.044715f;
}  // namespace

// erf form:   y = x Phi(x),  Phi(x) = 0.5 (1 + erf(x / sqrt 2))
//             y' = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
// tanh form:  y = 0.5 x (1 + tanh u),  u = sqrt(2/pi) (x + 0.044715 x^3)
//             y' = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u',  u' = sqrt(2/pi) (1 + 0.134145 x^2)
void gelu_forward(const float* x, float* y, float* d, std::size_t n, bool tanh_form) {
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
void gelu_backward(float* dy, const float* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dy[i] = dy[i] * d[i];
}

// ---- the op -------------------------------------------------------------------------------------

Tensor gelu(const Tensor& x, const std::string& approximate) {
  check<ValueError>(approximate == "none" || approximate == "tanh",
                    "approximate argument must be either none or tanh. | ", autograd::where("gelu"),
                    ": expected approximate \"none\" or \"tanh\", got \"", approximate, "\"");
  const bool tanh_form = approximate == "tanh";
  const bool recording = autograd::should_record({x});
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<gelu_forward>();
  const auto backward_kernel = kernels::pick<gelu_backward>();
  Array out = Array::from_shape(x.shape());
  auto derivative = std::make_shared<Array>(recording ? Array::from_shape(x.shape()) : Array());
  forward(x.data().data(), out.data(), recording ? derivative->data() : nullptr, x.numel(),
          tanh_form);
  Tensor y(std::move(out));
  autograd::record("gelu", y, {x}, /*saved=*/{},
                   [x = x.edge(), derivative, backward_kernel](Array dy) {
                     backward_kernel(dy.data(), derivative->data(), dy.size());  // reads d, not x
                     x.accumulate_grad(std::move(dy), "gelu");  // dy's own buffer has become dx
                   });
  return y;
}

}  // namespace tapegrad::ops
