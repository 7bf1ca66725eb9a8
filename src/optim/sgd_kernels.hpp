// src/optim/sgd_kernels.hpp (private to src/optim)
//
// SGD's update kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the reference in
// sgd_reference.cpp, the fast ones compiled from sgd_fast.cpp. The optimizer (sgd.cpp) checks the
// gradients, keeps the momentum buffers and calls kernels::sgd_kernels() once per parameter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

/// A group's options as SGD's kernels read them.
struct SGDStep {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

struct SGDKernels {
  /// One step over n elements from a dense gradient. buf: the momentum buffer (null without
  /// momentum); first: the buffer's first step (it is then set to the gradient, undamped).
  void (*step)(const SGDStep& h, std::size_t n, float* theta, const float* grad, float* buf,
               bool first);
  /// One step without momentum nor weight decay from a row-sparse gradient: for each of its rows
  /// p, in order, theta's row ids[p] (dim floats) moves by -lr times values' row p.
  void (*sparse_step)(const SGDStep& h, std::size_t rows, std::size_t dim, const std::int64_t* ids,
                      const float* values, float* theta);
};

TAPEGRAD_KERNEL_TABLES(SGDKernels, sgd)

}  // namespace tapegrad::kernels
