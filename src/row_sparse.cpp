// src/row_sparse.cpp: coalescing and densifying row-sparse gradients
// (docs/semantics.md#gradients-dense-and-row-sparse).
#include "tapegrad/row_sparse.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "ops/row_sparse_kernels.hpp"

namespace tapegrad {

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
  // Each group's rows added in order, from 0 (ops/row_sparse_reference.cpp).
  kernels::row_sparse_kernels().sum_groups(values.data(), dim, order.data(), group.data(), unique,
                                           out.values.data());
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
