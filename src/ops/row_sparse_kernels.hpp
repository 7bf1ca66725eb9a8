// src/ops/row_sparse_kernels.hpp (private to src/ops and src/row_sparse.cpp)
//
// The row-sparse gradient's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the
// reference in row_sparse_reference.cpp, the fast ones compiled from row_sparse_fast.cpp.
// RowSparseGrad::coalesce (src/row_sparse.cpp) sorts the ids and finds the groups of equal ones,
// then calls kernels::row_sparse_kernels().sum_groups to add each group's rows.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct RowSparseKernels {
  /// For g < groups: out[g, :] = 0 + values[order[group[g]], :] + values[order[group[g] + 1], :]
  /// + ... up to (not including) position group[g + 1] of order, added in that order. values
  /// and out hold rows of dim floats and do not overlap; group holds groups + 1 strictly
  /// ascending positions of order (no group is empty).
  void (*sum_groups)(const float* values, std::size_t dim, const std::size_t* order,
                     const std::size_t* group, std::size_t groups, float* out);
};

TAPEGRAD_KERNEL_TABLES(RowSparseKernels, row_sparse)

}  // namespace tapegrad::kernels
