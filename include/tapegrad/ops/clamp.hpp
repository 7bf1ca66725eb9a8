// include/tapegrad/ops/clamp.hpp
//
// Clamp, PyTorch's torch.clamp(input, min=None, max=None), elementwise on any shape:
//   y  = min(max(x, min), max)            (min > max: every y is max)
//   dx = dy where min <= x <= max, else 0 (both bounds pass the gradient, as in PyTorch)
// NaN as PyTorch 1.13: a NaN in x, or a NaN bound, gives NaN, and a gradient of 0 there. Backward
// reads the input x only. Implemented in src/ops/pointwise.cpp, one of its pointwise ops.
#pragma once

#include <optional>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// x clamped into [min, max], either bound left out (std::nullopt) for none; x of any shape -> the
/// same shape. Neither bound is a ValueError, as in PyTorch.
Tensor clamp(const Tensor& x, std::optional<float> min, std::optional<float> max);

}  // namespace tapegrad::ops
