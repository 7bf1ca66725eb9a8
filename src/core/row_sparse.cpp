// src/core/row_sparse.cpp: coalescing and densifying row-sparse gradients
// (docs/semantics.md#gradients-dense-and-row-sparse).
#include "tapegrad/core/row_sparse.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "row_sparse_kernels.hpp"

namespace tapegrad {

// ---- the reference kernel -----------------------------------------------------------------------
// src/kernels/row_sparse.cpp splits the groups over threads and gives the same bits.

// Coalescing: the rows of one id, summed in the order they were produced.
//   out[g, :] = 0 + x[order[group[g]], :] + ... + x[order[group[g + 1] - 1], :]
// The sum starts from 0, as adding into a zeroed dense row would (so a -0 row gives +0).
void detail::row_sparse_sum_groups(const float* values, std::size_t dim, const std::size_t* order,
                                   const std::size_t* group, std::size_t groups, float* out) {
  for (std::size_t g = 0; g < groups; ++g) {
    float* sum = out + g * dim;
    for (std::size_t j = 0; j < dim; ++j) sum[j] = 0.0f;
    for (std::size_t i = group[g]; i < group[g + 1]; ++i)
      for (std::size_t j = 0; j < dim; ++j) sum[j] += values[order[i] * dim + j];
  }
}

// ---- RowSparseGrad ------------------------------------------------------------------------------

RowSparseGrad RowSparseGrad::coalesce() const {
  const std::size_t n = indices.size(), dim = dense_shape.size() == 2 ? dense_shape[1] : 0;
  const std::int64_t* id = indices.data();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // stable: rows of a repeated id are summed in the order they were produced
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return id[a] < id[b]; });
  std::vector<std::size_t> group;  // order[group[g] .. group[g + 1]) share one id
  for (std::size_t i = 0; i < n; ++i)
    if (i == 0 || id[order[i]] != id[order[i - 1]]) group.push_back(i);
  const std::size_t unique = group.size();
  group.push_back(n);
  RowSparseGrad out;
  out.dense_shape = dense_shape;
  out.indices = xt::xarray<std::int64_t>::from_shape({unique});
  out.values = xt::xarray<float>::from_shape({unique, dim});
  for (std::size_t g = 0; g < unique; ++g) out.indices.data()[g] = id[order[group[g]]];
  // Each group's rows added in order, from 0.
  kernels::pick<detail::row_sparse_sum_groups>()(values.data(), dim, order.data(), group.data(),
                                                 unique, out.values.data());
  return out;
}

xt::xarray<float> RowSparseGrad::to_dense() const {
  xt::xarray<float> dense = xt::zeros<float>(dense_shape);
  add_to(dense);
  return dense;
}

void RowSparseGrad::add_to(xt::xarray<float>& dense) const {
  const std::size_t dim = dense_shape.size() == 2 ? dense_shape[1] : 0;
  for (std::size_t p = 0; p < indices.size(); ++p) {
    float* dst = dense.data() + static_cast<std::size_t>(indices.data()[p]) * dim;
    const float* src = values.data() + p * dim;
    for (std::size_t j = 0; j < dim; ++j) dst[j] += src[j];
  }
}

}  // namespace tapegrad
