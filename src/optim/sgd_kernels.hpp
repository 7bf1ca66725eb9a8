// src/optim/sgd_kernels.hpp (private to src/optim)
//
// SGD's update kernels: the references are defined in sgd.cpp, their fast versions in
// src/kernels/optim/sgd.cpp (src/core/dispatch.hpp). The optimizer (sgd.cpp) checks the
// gradients, keeps the momentum buffers and calls one of them once per parameter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::optim {

/// A group's options as SGD's kernels read them.
struct SGDStep {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

/// One step over n elements from a dense gradient. buf: the momentum buffer (null without
/// momentum); first: the buffer's first step (it is then set to the gradient, undamped).
void sgd_step(const SGDStep& h, std::size_t n, float* theta, const float* grad, float* buf,
              bool first);
/// One step without momentum nor weight decay from a row-sparse gradient: for each of its rows
/// p, in order, theta's row ids[p] (dim floats) moves by -lr times values' row p.
void sgd_sparse_step(const SGDStep& h, std::size_t rows, std::size_t dim, const std::int64_t* ids,
                     const float* values, float* theta);

}  // namespace tapegrad::optim
