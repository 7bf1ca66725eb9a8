// src/ops/rms_norm_kernels.hpp (private to src/ops)
//
// RMSNorm's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference in
// rms_norm_reference.cpp, the fast ones compiled from rms_norm_fast.cpp. The op (rms_norm.cpp)
// checks, allocates, calls kernels::rms_norm_kernels().forward and records a backward that calls
// .backward of the same table. x is seen as (rows, N), rows contiguous; every pointer but the
// optional ones (weight, dx, dweight may be null) holds rows * N, N or rows floats.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct RMSNormKernels {
  /// y = x * rstd * weight per row, and rstd = 1 / sqrt(mean(x^2) + eps) per row (rows floats).
  void (*forward)(const float* x, const float* weight, float* y, float* rstd, std::size_t rows,
                  std::size_t N, double eps);
  /// dx = dL/dx (written, not added) and dweight = its sum over the rows (written, not added)
  /// from dy and the forward's x, weight and rstd. A null output is not computed.
  void (*backward)(const float* dy, const float* x, const float* weight, const float* rstd,
                   float* dx, float* dweight, std::size_t rows, std::size_t N);
};

TAPEGRAD_KERNEL_TABLES(RMSNormKernels, rms_norm)

}  // namespace tapegrad::kernels
