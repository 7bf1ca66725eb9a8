// src/ops/kl_div_kernels.hpp (private to src/ops)
//
// kl_div's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference in
// kl_div_reference.cpp, the fast ones compiled from kl_div_fast.cpp. The op (kl_div.cpp) checks,
// allocates, calls kernels::kl_div_kernels().forward and records a backward that calls .backward
// of the same table. input, target, slope and dx hold n floats each.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct KLDivKernels {
  /// loss_i = xlogy(t_i, t_i) - t_i * x_i, or exp(t_i) * (t_i - x_i) with log_target, and its
  /// derivative slope_i = dloss_i/dx_i (n floats). Into loss: the n loss_i when per_element, else
  /// one float, float(sum_i loss_i) / divisor.
  void (*forward)(const float* x, const float* target, float* loss, float* slope, std::size_t n,
                  bool log_target, bool per_element, float divisor);
  /// dx_i = slope_i * dy_i when per_element, else slope_i * (dy / divisor) (written, not added).
  void (*backward)(const float* dy, const float* slope, float* dx, std::size_t n, bool per_element,
                   float divisor);
};

TAPEGRAD_KERNEL_TABLES(KLDivKernels, kl_div)

}  // namespace tapegrad::kernels
