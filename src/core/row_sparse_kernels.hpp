// src/core/row_sparse_kernels.hpp (private)
//
// The row-sparse gradient's kernel, declared once: the reference is defined in row_sparse.cpp,
// its fast versions in src/kernels/row_sparse.cpp (dispatch.hpp). RowSparseGrad::coalesce sorts
// the ids and finds the groups of equal ones, then calls it to add each group's rows.
#pragma once

#include <cstddef>

#include "dispatch.hpp"

namespace tapegrad::detail {

/// For g < groups: out[g, :] = 0 + values[order[group[g]], :] + values[order[group[g] + 1], :]
/// + ... up to (not including) position group[g + 1] of order, added in that order. values
/// and out hold rows of dim floats and do not overlap; group holds groups + 1 strictly
/// ascending positions of order (no group is empty).
void row_sparse_sum_groups(const float* values, std::size_t dim, const std::size_t* order,
                           const std::size_t* group, std::size_t groups, float* out);

}  // namespace tapegrad::detail
