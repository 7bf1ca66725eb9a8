// include/tapegrad/ops/rms_norm.hpp
//
// Root-mean-square layer normalisation (Zhang and Sennrich, "Root Mean Square Layer
// Normalization", 2019), the norm of LLaMA's blocks, as PyTorch 2.4's F.rms_norm:
//   y = x / sqrt(mean(x^2) + eps) * weight        over the N = prod(normalized_shape) last elements
// Unlike LayerNorm it subtracts no mean and adds no bias: it only rescales each row. eps unset
// means PyTorch's default, torch.finfo(float32).eps = 2^-23 (about 1.19e-7). One fused op
// (src/ops/rms_norm.cpp); saved for backward: x, weight, and 1 / sqrt(mean(x^2) + eps) per row.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// x (*, normalized_shape) -> the same shape, each row divided by its root mean square, then
/// scaled by weight (shape normalized_shape; undefined means 1). eps unset: float32's machine
/// epsilon. ShapeError when x does not end with normalized_shape or weight has another shape,
/// ValueError for an empty or negative normalized_shape or a negative or NaN eps.
Tensor rms_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                const Tensor& weight = Tensor(), std::optional<double> eps = std::nullopt);

}  // namespace tapegrad::ops
