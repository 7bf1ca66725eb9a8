// include/tapegrad/ops/shape.hpp
//
// Shape ops. tapegrad has no views: each returns a new tensor with its own (contiguous) storage,
// and its backward routes the gradient back to where each element came from.
#pragma once

#include <cstdint>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// The same elements in row-major order under a new shape; one dimension may be -1 (inferred).
/// A shape with another number of elements is ShapeError("shape '[2, 5]' is invalid for input of size 6 | ...").
Tensor reshape(const Tensor& a, const std::vector<std::int64_t>& shape);
/// Swaps two dimensions (negative values count from the end).
Tensor transpose(const Tensor& a, std::int64_t dim0, std::int64_t dim1);
/// Reorders the dimensions: output dimension i is input dimension dims[i].
Tensor permute(const Tensor& a, const std::vector<std::int64_t>& dims);
/// Elements start, start + step, ... below end along dim (Python slice semantics for start/end:
/// negative values count from the end, and both are clamped to the size). step > 0.
Tensor slice(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t end,
             std::int64_t step = 1);
/// Joins tensors along an existing dimension; all other dimensions must agree (else ShapeError).
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Inserts a dimension of size 1 at dim.
Tensor unsqueeze(const Tensor& a, std::int64_t dim);

}  // namespace tapegrad::ops
