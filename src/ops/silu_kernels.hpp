// src/ops/silu_kernels.hpp (private to src/ops)
//
// SiLU's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference in
// silu_reference.cpp, the fast ones compiled from silu_fast.cpp. The op (silu.cpp) allocates,
// calls kernels::silu_kernels().forward and records a backward that calls .backward of the same
// table. Every pointer holds n floats.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct SiluKernels {
  /// y = silu(x) = x * sigmoid(x).
  void (*forward)(const float* x, float* y, std::size_t n);
  /// dy = dy * silu'(x) in place (dy becomes dx), x the forward's input.
  void (*backward)(const float* x, float* dy, std::size_t n);
};

TAPEGRAD_KERNEL_TABLES(SiluKernels, silu)

}  // namespace tapegrad::kernels
