// src/kernels/optim/sgd.cpp
//
// SGD's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md) and registered as the set's versions of optim::sgd_step and sgd_sparse_step:
// the reference's maths (src/optim/sgd.cpp) in one fused pass per parameter, in PyTorch's order of
// operations (docs/semantics.md#optimizers), the scalars cast to float once, where they meet the
// data, and hoisted out of the loops.
#include "../../optim/sgd_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

struct SGDScalars {
  float neg_lr;  // −lr
  float weight_decay;
  float momentum;    // μ
  float grad_share;  // 1 − dampening
  bool nesterov, maximize;
};

SGDScalars scalars(const optim::SGDStep& h) {
  return SGDScalars{float(-h.lr),      float(h.weight_decay),
                    float(h.momentum), float(1.0 - h.dampening),
                    h.nesterov,        h.maximize};
}

// One SGD step of n elements:
//   g = maximize ? −grad : grad
//   g = g + wd·θ                                          if wd ≠ 0
//   if momentum ≠ 0:  buf = first ? g : buf·μ + (1 − dampening)·g
//                     g   = nesterov ? g + μ·buf : buf
//   θ = θ + (−lr)·g
// buf is nullptr without momentum; `first` is the buffer's first step (it starts as a copy of g,
// undamped).
void step(const optim::SGDStep& h, std::size_t n, float* theta, const float* grad, float* buf,
          bool first) {
  const SGDScalars k = scalars(h);
  for (std::size_t i = 0; i < n; ++i) {
    float g = k.maximize ? -grad[i] : grad[i];
    if (k.weight_decay != 0.0f) g = g + k.weight_decay * theta[i];
    if (buf != nullptr) {
      buf[i] = first ? g : buf[i] * k.momentum + k.grad_share * g;
      g = k.nesterov ? g + k.momentum * buf[i] : buf[i];
    }
    theta[i] = theta[i] + k.neg_lr * g;
  }
}

// The row-sparse update without momentum: θ[ids[p], :] += (−lr)·g[p, :] for each listed row p, in
// order, so a repeated id adds twice (PyTorch's dense += sparse).
void sparse_step(const optim::SGDStep& h, std::size_t rows, std::size_t dim,
                 const std::int64_t* ids, const float* values, float* theta) {
  const SGDScalars k = scalars(h);
  for (std::size_t p = 0; p < rows; ++p) {
    float* row = theta + static_cast<std::size_t>(ids[p]) * dim;
    const float* grad = values + p * dim;
    for (std::size_t j = 0; j < dim; ++j)
      row[j] = row[j] + k.neg_lr * (k.maximize ? -grad[j] : grad[j]);
  }
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::optim::sgd_step, step);
TAPEGRAD_FAST_KERNEL(tapegrad::optim::sgd_sparse_step, sparse_step);
