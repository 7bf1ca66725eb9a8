// src/optim/clip_grad_kernels.hpp (private to src/optim)
//
// clip_grad_norm_'s kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference
// in clip_grad_reference.cpp, the fast ones compiled from clip_grad_fast.cpp. clip_grad.cpp takes
// each gradient's norm, the norm of those norms, and scales every gradient.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct ClipGradKernels {
  /// The p-norm of n floats, PyTorch's vector_norm, accumulated in double: p = inf → max |x|,
  /// p = −inf → min |x|, p = 0 → the count of non-zeros, else (Σ |x|^p)^(1/p). NaN propagates.
  double (*norm)(const float* x, std::size_t n, double p);
  /// The same of n doubles: the total norm from the per-parameter norms.
  double (*norm_of_norms)(const double* x, std::size_t n, double p);
  /// x = x·c, n floats.
  void (*scale)(float* x, std::size_t n, float c);
};

TAPEGRAD_KERNEL_TABLES(ClipGradKernels, clip_grad)

}  // namespace tapegrad::kernels
