// src/ops/layer_norm_kernels.hpp (private to src/ops)
//
// Layer norm's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference in
// layer_norm_reference.cpp, the fast ones compiled from layer_norm_fast.cpp. The op
// (layer_norm.cpp) checks, allocates, calls kernels::layer_norm_kernels().forward and records a backward
// that calls .backward of the same table. x is seen as (rows, N), rows contiguous; every pointer
// but the optional ones (weight, bias, dx, dweight, dbias may be null) holds rows * N or N floats.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct LayerNormKernels {
  /// y = weight * (x - mean) * rstd + bias, per row, and the row statistics backward needs:
  /// mean, rstd = 1 / d and k (rows floats each). annotated: d = std (unbiased) + eps, else
  /// d = sqrt(var (biased) + eps); k = dd/dc_i / (c_i / d) with c = x - mean.
  void (*forward)(const float* x, const float* weight, const float* bias, float* y, float* mean,
                  float* rstd, float* k, std::size_t rows, std::size_t N, double eps,
                  bool annotated);
  /// dx = dL/dx (written, not added), dweight and dbias = sums over the rows (written, not added)
  /// from dy and the forward's x, weight and statistics. A null output is not computed.
  void (*backward)(const float* dy, const float* x, const float* weight, const float* mean,
                   const float* rstd, const float* k, float* dx, float* dweight, float* dbias,
                   std::size_t rows, std::size_t N);
};

TAPEGRAD_KERNEL_TABLES(LayerNormKernels, layer_norm)

}  // namespace tapegrad::kernels
