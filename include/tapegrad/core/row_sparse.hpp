// include/tapegrad/core/row_sparse.hpp
//
// The gradient of a 2-D tensor that touches few rows: what Embedding(sparse = true) produces
// (docs/semantics.md#gradients-dense-and-row-sparse). Row p of `values` belongs to row
// `indices[p]` of the dense tensor; ids may repeat (their rows add up) and come in the order
// they were produced.
#pragma once

#include <cstdint>

#include <xtensor/xarray.hpp>

#include "tapegrad/core/errors.hpp"

namespace tapegrad {

struct RowSparseGrad {
  xt::xarray<std::int64_t> indices;  ///< (n,) row ids; duplicates allowed
  xt::xarray<float> values;          ///< (n, dim) the gradient rows
  Shape dense_shape;                 ///< (num_rows, dim) of the dense tensor

  std::size_t nnz_rows() const { return indices.size(); }
  /// ids sorted ascending and unique; the rows of a repeated id summed in their original order.
  RowSparseGrad coalesce() const;
  /// zeros(dense_shape) with every row scatter-added.
  xt::xarray<float> to_dense() const;
  /// dense += this, row by row.
  void add_to(xt::xarray<float>& dense) const;
};

}  // namespace tapegrad
