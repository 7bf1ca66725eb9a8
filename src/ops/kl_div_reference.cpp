// src/ops/kl_div_reference.cpp
//
// kl_div's reference kernels: the maths as plain loops, no threads, no intrinsics
// (docs/kernels.md: read these first). The fast kernels (kl_div_fast.cpp) compute the same
// formula with a vectorised exponential (exp_f32) where these call std::exp, which can move a
// log_target result by a float rounding or two (docs/semantics.md#kernel-sets).
#include <cmath>

#include "kl_div_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// The pointwise KL divergence of the target t from the input x (x holds log-probabilities):
//   loss_i = t_i * log(t_i) - t_i * x_i        (t_i log t_i = 0 at t_i = 0, PyTorch's xlogy)
//   loss_i = exp(t_i) * (t_i - x_i)            (log_target: t holds log-probabilities too)
//   slope_i = dloss_i/dx_i = -t_i, or -exp(t_i)
// Reduced: sum_i loss_i (in double, in order) / divisor (1, n or the batch size).
void forward(const float* x, const float* t, float* loss, float* slope, std::size_t n,
             bool log_target, bool per_element, float divisor) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    float loss_i;
    if (log_target) {
      loss_i = std::exp(t[i]) * (t[i] - x[i]);
      slope[i] = -std::exp(t[i]);
    } else {
      const float xlogy = t[i] == 0.0f ? 0.0f : t[i] * std::log(t[i]);
      loss_i = xlogy - t[i] * x[i];
      slope[i] = -t[i];
    }
    if (per_element) loss[i] = loss_i;
    total += loss_i;
  }
  if (!per_element) loss[0] = float(total) / divisor;
}

// dx_i = slope_i * dy_i (per element), or slope_i * dy / divisor (reduced)
void backward(const float* dy, const float* slope, float* dx, std::size_t n, bool per_element,
              float divisor) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = slope[i] * (per_element ? dy[i] : dy[0] / divisor);
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const KLDivKernels kl_div{forward, backward};

}  // namespace tapegrad::kernels::reference
