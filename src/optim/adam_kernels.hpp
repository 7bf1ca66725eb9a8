// src/optim/adam_kernels.hpp (private to src/optim)
//
// Adam's and AdamW's update kernel: the reference is defined in adam.cpp, its fast versions in
// src/kernels/optim/adam.cpp (src/core/dispatch.hpp). The optimizers (adam.cpp) check the
// gradients, keep the state and call it once per parameter per step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::optim {

/// One parameter's step of Adam (l2 = weight_decay, decay = 1) or AdamW (l2 = 0,
/// decay = 1 - lr * weight_decay), as the optimizer's options give it, in double.
struct AdamStep {
  double lr, beta1, beta2, eps;
  double l2;          ///< Adam's coupled weight decay, added to the gradient
  double decay;       ///< AdamW's decoupled factor on the parameter
  std::int64_t step;  ///< t, counted from 1
  bool maximize;
};

/// One step over n elements: theta, m (exp_avg), v (exp_avg_sq) and, with amsgrad, vmax
/// (max_exp_avg_sq; null without) updated in place from grad.
void adam_step(const AdamStep& h, std::size_t n, float* theta, const float* grad, float* m,
               float* v, float* vmax);

}  // namespace tapegrad::optim
