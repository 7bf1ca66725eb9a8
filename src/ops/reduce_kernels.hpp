// src/ops/reduce_kernels.hpp (private)
//
// The reductions' kernels: the references are defined in reduce.cpp, their fast versions in
// src/kernels/reduce.cpp (src/core/dispatch.hpp; reduce_sum has none). The ops (reduce.cpp,
// sum_to_shape in broadcast.cpp, and linear's bias gradient in matmul.cpp) check, plan the shapes,
// allocate and call them. Arrays are contiguous, row-major.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// x[0] + x[1] + ... + x[n-1], added in double in that order.
double reduce_sum(const float* x, std::size_t n);
/// acc[o] += x[i], in double, for every position i of the row-major index space `shape` (rank
/// dimensions), where o = sum over d of index_d * out_strides[d]: the strides are 0 along the
/// dimensions summed over. Each acc[o] receives its elements in increasing i.
void reduce_sum_dims(const float* x, const std::size_t* shape, const std::size_t* out_strides,
                     std::size_t rank, double* acc);
/// x seen as (outer, n, inner): out[o, j] = x[o, 0, j] + x[o, 1, j] + ..., in float, starting
/// from 0 and adding in increasing k (the adjoint of broadcasting along the middle axis).
void reduce_sum_axis(const float* x, std::size_t outer, std::size_t n, std::size_t inner,
                     float* out);
/// x seen as (outer, n, inner), n >= 1: values[o, j] = the largest x[o, k, j] and indices[o, j]
/// the first k holding it; a NaN wins (the first NaN), as in PyTorch.
void reduce_max_along(const float* x, std::size_t outer, std::size_t n, std::size_t inner,
                      float* values, std::int64_t* indices);

}  // namespace tapegrad::ops
