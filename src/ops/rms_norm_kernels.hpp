// src/ops/rms_norm_kernels.hpp (private)
//
// RMSNorm's kernels: the references are defined in rms_norm.cpp, their fast versions in
// src/kernels/rms_norm.cpp (src/core/dispatch.hpp). x is seen as (rows, N), rows contiguous;
// every pointer but the optional ones (weight, dx, dweight may be null) holds rows * N, N or rows
// floats.
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// y = x * rstd * weight per row, and rstd = 1 / sqrt(mean(x^2) + eps) per row (rows floats).
void rms_norm_forward(const float* x, const float* weight, float* y, float* rstd, std::size_t rows,
                      std::size_t N, double eps);
/// dx = dL/dx (written, not added) and dweight = its sum over the rows (written, not added)
/// from dy and the forward's x, weight and rstd. A null output is not computed.
void rms_norm_backward(const float* dy, const float* x, const float* weight, const float* rstd,
                       float* dx, float* dweight, std::size_t rows, std::size_t N);

}  // namespace tapegrad::ops
