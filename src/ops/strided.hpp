// src/ops/strided.hpp (private to src/ops)
//
// One helper shared by the ops that move elements between layouts: walk() visits the positions
// of an n-d index space in row-major order together with the offset of the same index in a
// second array addressed by arbitrary strides. permute reads its input through permuted strides;
// a reduction adds into its output through strides that are 0 along the reduced dimensions.
// The second array's offset is kept up to date like an odometer, so a step costs O(1).
#pragma once

#include <cstddef>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops::detail {

/// The strides of a contiguous row-major array of `shape`, in elements.
inline std::vector<std::size_t> row_major_strides(const Shape& shape) {
  std::vector<std::size_t> strides(shape.size());
  std::size_t step = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= shape[d];
  }
  return strides;
}

/// Calls f(i, offset) for every position i = 0, 1, ... of `shape` in row-major order, where
/// offset = sum over d of index[d] * strides[d].
template <class F>
void walk(const Shape& shape, const std::vector<std::size_t>& strides, F&& f) {
  const std::size_t rank = shape.size();
  std::size_t total = 1;
  for (std::size_t s : shape) total *= s;
  if (total == 0) return;
  if (rank == 0) {
    f(std::size_t{0}, std::size_t{0});
    return;
  }
  const std::size_t n_last = shape[rank - 1], s_last = strides[rank - 1];
  std::vector<std::size_t> index(rank, 0);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < total; i += n_last) {
    for (std::size_t j = 0; j < n_last; ++j) f(i + j, offset + j * s_last);
    for (std::size_t d = rank - 1; d-- > 0;) {  // carry into the dimensions before the last
      offset += strides[d];
      if (++index[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace tapegrad::ops::detail
