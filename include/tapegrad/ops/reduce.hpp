// include/tapegrad/ops/reduce.hpp
//
// Reductions: over all elements (a one-element result of shape ()), or along one or more
// dimensions (negative dims count from the end), keeping them as size 1 when keepdim.
// Sums accumulate in a fixed, sequential order, so results are reproducible bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

Tensor sum(const Tensor& a);  ///< shape ()
/// Over dim, or over dims (an empty list means every dimension, as in PyTorch). A dim out of range
/// is an IndexError, a dim listed twice a ValueError.
Tensor sum(const Tensor& a, std::int64_t dim, bool keepdim = false);
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& a);  ///< shape ()
Tensor mean(const Tensor& a, std::int64_t dim, bool keepdim = false);
Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims, bool keepdim = false);
/// The largest element; its gradient is shared evenly among tied maxima (PyTorch's max()).
/// NaN propagates. An empty tensor is a ShapeError.
Tensor max(const Tensor& a);
/// The largest value along dim; the gradient goes to the first index holding it (PyTorch's
/// max(dim).values). argmax() gives those indices. An empty dim is an IndexError.
Tensor max(const Tensor& a, std::int64_t dim, bool keepdim = false);
IndexArray argmax(const Tensor& a, std::int64_t dim, bool keepdim = false);

}  // namespace tapegrad::ops
