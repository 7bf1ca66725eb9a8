// src/ops/activation.cpp
//
// GELU in PyTorch's two forms, forward and backward side by side. When the op is recorded, the
// forward pass also writes the derivative gelu'(x), kept for backward (one float per element), so
// backward is one multiplication instead of a second evaluation of erf. The loops are single
// passes over contiguous memory with no library calls inside (erf_f32 and exp_f32 are inline), so
// they vectorise; large tensors are split over tapegrad's threads, each element computed by one
// thread in the same way, so the result does not depend on the thread count.
//
// "none" (PyTorch's GeluKernel and GeluBackwardKernel, same order of operations):
//   y  = (x * 0.5) * (1 + erf(x * sqrt(1/2)))
//   dx = dy * (cdf + x * pdf),   cdf = 0.5 * (1 + erf(x * sqrt(1/2))),  pdf = exp(-x^2 / 2) / sqrt(2 pi)
//   (the pdf's exponential is the one erf_f32 computes for its large branch, exp(-(x sqrt(1/2))^2))
// "tanh" (u = sqrt(2/pi) * (x + 0.044715 x^3)):
//   y  = 0.5 x (1 + tanh(u))
//   dx = dy * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2))
// computed through r = sigmoid(2u) = 1 / (1 + exp(-2u)), since 1 + tanh u = 2r and
// 1 - tanh^2 u = 4 r (1 - r): y = x * r, and no 1 - tanh(u) ever cancels digits (for u near 0
// or very negative), while exp(-2u) = inf (x -> -inf) gives r = 0, not inf / inf.
#include "tapegrad/ops/activation.hpp"

#include <cmath>
#include <memory>
#include <numbers>

#include "../erf_f32.hpp"
#include "../exp_f32.hpp"
#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

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
  return 1.0f / (1.0f + ::tapegrad::detail::exp_f32(-2.0f * u));
}

// y = gelu(x) and, when d is not null, d = gelu'(x) in the same pass.
void gelu_forward(const float* x, float* y, float* d, std::size_t n, bool tanh_form) {
  ::tapegrad::detail::parallel_for(n, kGrain, [&](std::size_t first, std::size_t last) {
    if (tanh_form && d) {
      for (std::size_t i = first; i < last; ++i) {
        const float r = tanh_form_r(x[i]);
        const float inner_derivative = kSqrt2OverPi * (1.0f + 3.0f * kKappa * (x[i] * x[i]));
        y[i] = x[i] * r;
        d[i] = r + 2.0f * x[i] * r * (1.0f - r) *
                       inner_derivative;  // 0.5 (1 + tanh) + 0.5 x (1 - tanh^2) u'
      }
    } else if (tanh_form) {
      for (std::size_t i = first; i < last; ++i) y[i] = x[i] * tanh_form_r(x[i]);
    } else if (d) {
      for (std::size_t i = first; i < last; ++i) {
        float gauss;  // exp(-x^2 / 2), which erf_f32 computes anyway
        const float erf = ::tapegrad::detail::erf_f32(x[i] * kSqrtHalf, gauss);
        const float cdf = 0.5f * (1.0f + erf);
        const float pdf = kInvSqrt2Pi * gauss;
        y[i] = (x[i] * 0.5f) * (1.0f + erf);
        d[i] = cdf + x[i] * pdf;
      }
    } else {
      for (std::size_t i = first; i < last; ++i)
        y[i] = (x[i] * 0.5f) * (1.0f + ::tapegrad::detail::erf_f32(x[i] * kSqrtHalf));
    }
  });
}
}  // namespace

Tensor gelu(const Tensor& x, const std::string& approximate) {
  check<ValueError>(approximate == "none" || approximate == "tanh",
                    "approximate argument must be either none or tanh. | ", autograd::where("gelu"),
                    ": expected approximate \"none\" or \"tanh\", got \"", approximate, "\"");
  const bool tanh_form = approximate == "tanh";
  const bool recording = autograd::should_record({x});
  Array out = Array::from_shape(x.shape());
  auto derivative = std::make_shared<Array>(recording ? Array::from_shape(x.shape()) : Array());
  gelu_forward(x.data().data(), out.data(), recording ? derivative->data() : nullptr, x.numel(),
               tanh_form);
  Tensor y(std::move(out));
  autograd::record("gelu", y, {x}, /*saved=*/{}, [x, derivative](Array dy) {  // reads d, not x
    float* g = dy.data();  // dy's own buffer becomes dx
    const float* d = derivative->data();
    ::tapegrad::detail::parallel_for(dy.size(), kGrain * 8,
                                     [&](std::size_t first, std::size_t last) {
                                       for (std::size_t i = first; i < last; ++i)
                                         g[i] = g[i] * d[i];
                                     });
    x.accumulate_grad(std::move(dy), "gelu");
  });
  return y;
}

}  // namespace tapegrad::ops
