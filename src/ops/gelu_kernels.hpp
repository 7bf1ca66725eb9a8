// src/ops/gelu_kernels.hpp (private to src/ops)
//
// GELU's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference in
// gelu_reference.cpp, the fast ones compiled from gelu_fast.cpp. The op (activation.cpp) checks,
// allocates, calls kernels::gelu_kernels().forward and records a backward that calls .backward of
// the same table. Every pointer holds n floats.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct GeluKernels {
  /// y = gelu(x) and, when d is not null, d = gelu'(x), which backward multiplies by. tanh_form:
  /// PyTorch's approximate="tanh", else the exact (erf) form.
  void (*forward)(const float* x, float* y, float* d, std::size_t n, bool tanh_form);
  /// dy = dy * d in place (dy becomes dx), d from the forward.
  void (*backward)(float* dy, const float* d, std::size_t n);
};

TAPEGRAD_KERNEL_TABLES(GeluKernels, gelu)

}  // namespace tapegrad::kernels
