// src/ops/reduce_kernels.hpp (private to src/ops)
//
// The reductions' kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference
// in reduce_reference.cpp, the fast ones compiled from reduce_fast.cpp. The ops (reduce.cpp,
// sum_to_shape in broadcast.cpp, and linear's bias gradient in matmul.cpp) check, plan the
// shapes, allocate and call kernels::reduce_kernels(). Arrays are contiguous, row-major.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct ReduceKernels {
  /// x[0] + x[1] + ... + x[n-1], added in double in that order.
  double (*sum)(const float* x, std::size_t n);
  /// acc[o] += x[i], in double, for every position i of the row-major index space `shape` (rank
  /// dimensions), where o = sum over d of index_d * out_strides[d]: the strides are 0 along the
  /// dimensions summed over. Each acc[o] receives its elements in increasing i.
  void (*sum_dims)(const float* x, const std::size_t* shape, const std::size_t* out_strides,
                   std::size_t rank, double* acc);
  /// x seen as (outer, n, inner): out[o, j] = x[o, 0, j] + x[o, 1, j] + ..., in float, starting
  /// from 0 and adding in increasing k (the adjoint of broadcasting along the middle axis).
  void (*sum_axis)(const float* x, std::size_t outer, std::size_t n, std::size_t inner, float* out);
  /// x seen as (outer, n, inner), n >= 1: values[o, j] = the largest x[o, k, j] and indices[o, j]
  /// the first k holding it; a NaN wins (the first NaN), as in PyTorch.
  void (*max_along)(const float* x, std::size_t outer, std::size_t n, std::size_t inner,
                    float* values, std::int64_t* indices);
};

TAPEGRAD_KERNEL_TABLES(ReduceKernels, reduce)

}  // namespace tapegrad::kernels
