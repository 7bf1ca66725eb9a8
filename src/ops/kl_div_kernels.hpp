// src/ops/kl_div_kernels.hpp (private)
//
// kl_div's kernels: the references are defined in kl_div.cpp, their fast versions in
// src/kernels/kl_div.cpp (src/core/dispatch.hpp). The op (kl_div.cpp) checks, allocates, calls
// the forward and records a backward that calls the same set's backward. input, target, slope and
// dx hold n floats each.
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// loss_i = xlogy(t_i, t_i) - t_i * x_i, or exp(t_i) * (t_i - x_i) with log_target, and its
/// derivative slope_i = dloss_i/dx_i (n floats). Into loss: the n loss_i when per_element, else
/// one float, float(sum_i loss_i) / divisor.
void kl_div_forward(const float* x, const float* target, float* loss, float* slope, std::size_t n,
                    bool log_target, bool per_element, float divisor);
/// dx_i = slope_i * dy_i when per_element, else slope_i * (dy / divisor) (written, not added).
void kl_div_backward(const float* dy, const float* slope, float* dx, std::size_t n,
                     bool per_element, float divisor);

}  // namespace tapegrad::ops
