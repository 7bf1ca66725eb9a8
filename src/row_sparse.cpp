// src/row_sparse.cpp: coalescing and densifying row-sparse gradients (SPEC 2.2.3).
#include "tapegrad/row_sparse.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace tapegrad {

RowSparseGrad RowSparseGrad::coalesce() const {
  const std::size_t n = indices.size(), dim = dense_shape.size() == 2 ? dense_shape[1] : 0;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // stable: rows of a repeated id are summed in the order they were produced
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return indices.data()[a] < indices.data()[b]; });
  std::size_t unique = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (i == 0 || indices.data()[order[i]] != indices.data()[order[i - 1]]) ++unique;
  RowSparseGrad out;
  out.dense_shape = dense_shape;
  out.indices = xt::xarray<std::int64_t>::from_shape({unique});
  out.values = xt::xarray<float>::from_shape({unique, dim});
  std::fill(out.values.begin(), out.values.end(), 0.0f);
  std::size_t row = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && indices.data()[order[i]] != indices.data()[order[i - 1]]) ++row;
    out.indices.data()[row] = indices.data()[order[i]];
    const float* src = values.data() + order[i] * dim;
    float* dst = out.values.data() + row * dim;
    for (std::size_t j = 0; j < dim; ++j) dst[j] += src[j];
  }
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
