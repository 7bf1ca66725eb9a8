// src/ops/layer_norm_kernels.hpp (private)
//
// Layer norm's kernels: the references are defined in layer_norm.cpp, their fast versions in
// src/kernels/layer_norm.cpp (src/core/dispatch.hpp). x is seen as (rows, N), rows contiguous;
// every pointer but the optional ones (weight, bias, dx, dweight, dbias may be null) holds
// rows * N or N floats.
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// y = weight * (x - mean) * rstd + bias, per row, and the row statistics backward needs:
/// mean, rstd = 1 / d and k (rows floats each). annotated: d = std (unbiased) + eps, else
/// d = sqrt(var (biased) + eps); k = dd/dc_i / (c_i / d) with c = x - mean.
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean,
                        float* rstd, float* k, std::size_t rows, std::size_t N, double eps,
                        bool annotated);
/// dx = dL/dx (written, not added), dweight and dbias = sums over the rows (written, not added)
/// from dy and the forward's x, weight and statistics. A null output is not computed.
void layer_norm_backward(const float* dy, const float* x, const float* w, const float* mean,
                         const float* rstd, const float* k, float* dx, float* dw, float* db,
                         std::size_t rows, std::size_t N);

}  // namespace tapegrad::ops
