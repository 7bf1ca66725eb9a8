// include/tapegrad/ops/broadcast.hpp
//
// NumPy/PyTorch broadcasting, checked with a message naming the op and both shapes, and its
// adjoint sum_to_shape: a value repeated k times in forward receives the SUM of the k incoming
// gradients in backward. Every op that broadcasts passes each input's gradient through
// sum_to_shape; Tensor::accumulate_grad catches a forgotten one by checking the shape.
#pragma once

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// The broadcast shape of a and b, or ShapeError("The size of tensor a (3) must match the size
/// of tensor b (4) at non-singleton dimension 1 | op: shapes (2, 3) and (2, 4) cannot be broadcast").
Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b);

/// Sums g over the axes broadcasting added or stretched, so the result has `shape`.
Array sum_to_shape(const Array& g, const Shape& shape);
/// The same, moving g through when no reduction is needed.
Array sum_to_shape(Array&& g, const Shape& shape);

/// Normalises a possibly negative dimension of a rank-`rank` tensor ("Dimension out of range").
std::size_t normalize_dim(const std::string& op, std::int64_t dim, std::size_t rank);

}  // namespace tapegrad::ops
