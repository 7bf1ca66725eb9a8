// src/row_sparse.cpp: coalescing and densifying row-sparse gradients
// (docs/semantics.md#gradients-dense-and-row-sparse).
#include "tapegrad/row_sparse.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "parallel.hpp"

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
  // Row g = 0 + the group's rows in order: the first is stored as 0 + x (what adding it to a
  // zeroed row gives, -0 included), the others added. The groups are disjoint: split over threads.
  const float* in = values.data();
  float* sum = out.values.data();
  const std::size_t grain =
      std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(dim, 1));
  detail::parallel_for(unique, grain, [&](std::size_t first, std::size_t last) {
    for (std::size_t g = first; g < last; ++g) {
      out.indices.data()[g] = id[order[group[g]]];
      float* dst = sum + g * dim;
      const float* src = in + order[group[g]] * dim;
      for (std::size_t j = 0; j < dim; ++j) dst[j] = 0.0f + src[j];
      for (std::size_t i = group[g] + 1; i < group[g + 1]; ++i) {
        src = in + order[i] * dim;
        for (std::size_t j = 0; j < dim; ++j) dst[j] += src[j];
      }
    }
  });
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
