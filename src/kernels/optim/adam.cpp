// src/kernels/optim/adam.cpp
//
// Adam's fast kernel, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md) and registered as the set's version of optim::adam_step (src/optim/adam.cpp,
// the reference). The maths is the reference's, in PyTorch's order of operations
// (docs/semantics.md#optimizers): one pass over contiguous memory that reads θ, g, m, v (and vmax)
// once and writes θ, m, v once, with no temporaries (bench/w3_adam_step), split over the threads.
// Scalars (bias corrections, step size, the AdamW decay factor) are computed in double, per
// parameter, and cast to float once, where they meet the float32 data, as PyTorch does with
// Python numbers. The build never uses -ffast-math: the order below is the order executed.
#include <cmath>

#include "../../core/parallel.hpp"
#include "../../optim/adam_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// The float32 scalars of one parameter's step.
struct AdamScalars {
  float w1;             // 1 − β1: the weight with which m moves towards g
  float one_minus_w1;   // 1 − w1, computed in float as PyTorch's lerp does
  float beta2, w2;      // β2 and 1 − β2
  float l2;             // Adam's coupled weight decay (0 for AdamW)
  float decay;          // AdamW's 1 − lr·wd (1 for Adam, which leaves θ exact)
  float neg_step_size;  // −lr / bc1,   bc1 = 1 − β1^t
  float sqrt_bc2;       // sqrt(bc2),   bc2 = 1 − β2^t
  float eps;
  bool maximize;
};

// The scalars of step t (double, then float once).
AdamScalars scalars(const optim::AdamStep& h) {
  const double bc1 = 1.0 - std::pow(h.beta1, double(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, double(h.step));
  const double step_size = h.lr / bc1;
  const float w1 = float(1.0 - h.beta1);
  return AdamScalars{w1,           1.0f - w1,      float(h.beta2),    float(1.0 - h.beta2),
                     float(h.l2),  float(h.decay), float(-step_size), float(std::sqrt(bc2)),
                     float(h.eps), h.maximize};
}

// One Adam step of elements [begin, end), in this order:
//   g  = maximize ? −grad : grad
//   g  = g + l2·θ                                 if l2 ≠ 0 (Adam's L2, with θ before the step)
//   θ  = θ·decay                                  (AdamW's decoupled decay; Adam passes 1)
//   m  = lerp(m, g, w1):  w1 < 0.5 ? m + w1·(g − m) : g − (g − m)·(1 − w1)     (PyTorch 2.x)
//   v  = v·β2 + (1 − β2)·g·g
//   s  = amsgrad ? (vmax = max(vmax, v)) : v      max of the raw v; NaN propagates as torch.maximum
//   θ  = θ + ((−lr/bc1)·m) / (sqrt(s)/sqrt(bc2) + eps)
// m and v start at zero, so early averages are biased towards zero; dividing m by bc1 and v by bc2
// (inside the sqrt) undoes that. eps is added AFTER the correction, PyTorch's placement: it keeps
// the first step ≈ lr·sign(g) however small g is. vmax is nullptr unless amsgrad.
void step_range(const AdamScalars k, std::size_t begin, std::size_t end, float* theta,
                const float* grad, float* m, float* v, float* vmax) {
  // (−1)·grad is exactly −grad; a float factor, unlike a bool select, lets the loop vectorise.
  const float sign = k.maximize ? -1.0f : 1.0f;
  for (std::size_t i = begin; i < end; ++i) {
    float g = sign * grad[i];
    if (k.l2 != 0.0f) g = g + k.l2 * theta[i];
    const float t = theta[i] * k.decay;
    const float mi = k.w1 < 0.5f ? m[i] + k.w1 * (g - m[i]) : g - (g - m[i]) * k.one_minus_w1;
    const float vi = v[i] * k.beta2 + k.w2 * g * g;
    float s = vi;
    if (vmax != nullptr) {
      s = (vi > vmax[i] || std::isnan(vi)) ? vi : vmax[i];
      vmax[i] = s;
    }
    m[i] = mi;
    v[i] = vi;
    theta[i] = t + k.neg_step_size * mi / (std::sqrt(s) / k.sqrt_bc2 + k.eps);
  }
}

// One Adam step over n elements: bound by memory bandwidth (28 bytes per element), so split
// over the threads in blocks of at least 16 Ki elements (tens of microseconds of work each; a
// GPT's matrices, 16 K to 64 K elements, then split too).
void step(const optim::AdamStep& h, std::size_t n, float* theta, const float* grad, float* m,
          float* v, float* vmax) {
  const AdamScalars k = scalars(h);
  detail::parallel_for(n, std::size_t{1} << 14, [&](std::size_t begin, std::size_t end) {
    step_range(k, begin, end, theta, grad, m, v, vmax);
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::optim::adam_step, step);
