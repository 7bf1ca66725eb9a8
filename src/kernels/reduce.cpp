// src/kernels/reduce.cpp
//
// The reductions' fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths and the order of every sum are the reference kernels'
// (src/ops/reduce.cpp: a double sum in the order of its elements in memory), so the results are
// the same bits; what differs is the bookkeeping:
// - sum_dims keeps the output offset up to date like an odometer (O(1) a step) instead of
//   recomputing it from the index with a division per dimension, and adds a row onto a row of
//   the sums in one loop that vectorises when the last dimension is kept (column sums).
// - sum_axis adds whole rows of `inner` elements at a time (a loop that vectorises: each output
//   still receives its terms in the order of k), and max_along compares along a row in place.
// reduce_sum, the sum of all elements, has no fast version: a double sum in order is one chain of
// additions, the same code on every set, so the ops call the reference.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "scratch.hpp"
#include "../ops/reduce_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error \
    "src/kernels/reduce.cpp is compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

void sum_dims(const float* x, const std::size_t* shape, const std::size_t* out_strides,
              std::size_t rank, double* acc) {
  std::size_t total = 1;
  for (std::size_t d = 0; d < rank; ++d) total *= shape[d];
  if (total == 0) return;
  if (rank == 0) {
    acc[0] += x[0];
    return;
  }
  const std::size_t n_last = shape[rank - 1], s_last = out_strides[rank - 1];
  detail::Scratch<std::size_t> index(rank, 0);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < total; i += n_last) {
    if (s_last == 1) {  // a row added onto a row of acc (a column sum): a loop that vectorises
      double* a = acc + offset;
      const float* row = x + i;
      for (std::size_t j = 0; j < n_last; ++j) a[j] += row[j];
    } else {
      for (std::size_t j = 0; j < n_last; ++j) acc[offset + j * s_last] += x[i + j];
    }
    for (std::size_t d = rank - 1; d-- > 0;) {  // carry into the dimensions before the last
      offset += out_strides[d];
      if (++index[d] < shape[d]) break;
      offset -= out_strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

void sum_axis(const float* x, std::size_t outer, std::size_t n, std::size_t inner, float* out) {
  for (std::size_t o = 0; o < outer; ++o) {
    float* acc = out + o * inner;
    for (std::size_t j = 0; j < inner; ++j) acc[j] = 0.0f;
    for (std::size_t k = 0; k < n; ++k) {
      const float* row = x + (o * n + k) * inner;
      for (std::size_t j = 0; j < inner; ++j) acc[j] += row[j];
    }
  }
}

void max_along(const float* x, std::size_t outer, std::size_t n, std::size_t inner, float* values,
               std::int64_t* indices) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < inner; ++j) {
      const float* row = x + o * n * inner + j;
      float best = row[0];
      std::size_t at = 0;
      for (std::size_t k = 1; k < n && !std::isnan(best); ++k)
        if (row[k * inner] > best || std::isnan(row[k * inner])) {
          best = row[k * inner];
          at = k;
        }
      values[o * inner + j] = best;
      indices[o * inner + j] = static_cast<std::int64_t>(at);
    }
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::reduce_sum_dims, sum_dims);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::reduce_sum_axis, sum_axis);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::reduce_max_along, max_along);
