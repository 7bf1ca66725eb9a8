// src/optim/sparse_adam_kernels.hpp (private to src/optim)
//
// SparseAdam's update kernel, one table per kernel set (src/kernels/kernel_sets.hpp): the reference
// in sparse_adam_reference.cpp, the fast ones compiled from sparse_adam_fast.cpp. The optimizer
// (sparse_adam.cpp) checks and coalesces the gradient and calls kernels::sparse_adam_kernels().step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

/// One parameter's step of SparseAdam, as the optimizer's options give it, in double.
struct SparseAdamStep {
  double lr, beta1, beta2, eps;
  std::int64_t step;  ///< t, counted from 1
  bool maximize;
};

struct SparseAdamKernels {
  /// One step over the rows of a coalesced gradient (ids distinct): for each p, the rows ids[p]
  /// (dim floats) of theta, m (exp_avg) and v (exp_avg_sq) move by values' row p; the other rows
  /// stay as they are.
  void (*step)(const SparseAdamStep& h, std::size_t rows, std::size_t dim, const std::int64_t* ids,
               const float* values, float* theta, float* m, float* v);
};

TAPEGRAD_KERNEL_TABLES(SparseAdamKernels, sparse_adam)

}  // namespace tapegrad::kernels
