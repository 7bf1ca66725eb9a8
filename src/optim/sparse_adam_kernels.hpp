// src/optim/sparse_adam_kernels.hpp (private to src/optim)
//
// SparseAdam's update kernel: the reference is defined in sparse_adam.cpp, its fast versions in
// src/kernels/optim/sparse_adam.cpp (src/core/dispatch.hpp). The optimizer (sparse_adam.cpp) checks
// and coalesces the gradient and calls it once per parameter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::optim {

/// One parameter's step of SparseAdam, as the optimizer's options give it, in double.
struct SparseAdamStep {
  double lr, beta1, beta2, eps;
  std::int64_t step;  ///< t, counted from 1
  bool maximize;
};

/// One step over the rows of a coalesced gradient (ids distinct): for each p, the rows ids[p]
/// (dim floats) of theta, m (exp_avg) and v (exp_avg_sq) move by values' row p; the other rows
/// stay as they are.
void sparse_adam_step(const SparseAdamStep& h, std::size_t rows, std::size_t dim,
                      const std::int64_t* ids, const float* values, float* theta, float* m,
                      float* v);

}  // namespace tapegrad::optim
