// src/optim/sgd_reference.cpp
//
// SGD's reference kernels: the algorithm as PyTorch's documentation writes it
// (https://pytorch.org/docs/stable/generated/torch.optim.SGD.html), one element after another, in
// float, no threads (docs/kernels.md: read this first). The fast kernels (sgd_fast.cpp) do the same
// float operations in the same order: the same bits (docs/semantics.md#kernel-sets).
#include "sgd_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// g = ±grad + wd·θ
// with momentum μ:  buf = first ? g : μ·buf + (1 − dampening)·g;  g = nesterov ? g + μ·buf : buf
// θ = θ − lr·g
void step(const SGDStep& h, std::size_t n, float* theta, const float* grad, float* buf,
          bool first) {
  const float lr = float(h.lr), mu = float(h.momentum), wd = float(h.weight_decay);
  for (std::size_t i = 0; i < n; ++i) {
    float g = h.maximize ? -grad[i] : grad[i];
    if (wd != 0) g += wd * theta[i];
    if (buf) {
      buf[i] = first ? g : mu * buf[i] + float(1.0 - h.dampening) * g;
      g = h.nesterov ? g + mu * buf[i] : buf[i];
    }
    theta[i] -= lr * g;
  }
}

// θ[ids[p], :] −= lr·(±values[p, :]) for each row p, in order (a repeated id moves twice)
void sparse_step(const SGDStep& h, std::size_t rows, std::size_t dim, const std::int64_t* ids,
                 const float* values, float* theta) {
  for (std::size_t p = 0; p < rows; ++p)
    for (std::size_t j = 0; j < dim; ++j) {
      const float g = values[p * dim + j];
      theta[std::size_t(ids[p]) * dim + j] -= float(h.lr) * (h.maximize ? -g : g);
    }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const SGDKernels sgd{step, sparse_step};

}  // namespace tapegrad::kernels::reference
