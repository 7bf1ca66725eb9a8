// src/optim/sparse_adam_reference.cpp
//
// SparseAdam's reference kernel: PyTorch's algorithm
// (https://pytorch.org/docs/stable/generated/torch.optim.SparseAdam.html) on the gradient's rows
// only, one element after another, in float, no threads (docs/kernels.md: read this first). The
// fast kernel (sparse_adam_fast.cpp) writes the moments' updates as corrections, m + (1 − β1)(g − m),
// and splits the rows over the threads, which can move a result by a few float roundings
// (docs/semantics.md#kernel-sets).
#include <cmath>

#include "sparse_adam_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// for the rows r of the gradient G only (the others keep m, v and θ as they are):
// g = ±G_r     m_r = β1·m_r + (1 − β1)·g     v_r = β2·v_r + (1 − β2)·g²
// θ_r = θ_r − lr·sqrt(1 − β2^t)/(1 − β1^t) · m_r / (sqrt(v_r) + eps)    (eps before the correction)
void step(const SparseAdamStep& h, std::size_t rows, std::size_t dim, const std::int64_t* ids,
          const float* values, float* theta, float* m, float* v) {
  // Every scalar is a Python number to PyTorch: computed in double, cast to float once.
  const float b1 = float(h.beta1), b2 = float(h.beta2), eps = float(h.eps);
  const float w1 = float(1.0 - h.beta1), w2 = float(1.0 - h.beta2);
  const double t = double(h.step);
  const float step_size =
      float(h.lr * std::sqrt(1.0 - std::pow(h.beta2, t)) / (1.0 - std::pow(h.beta1, t)));
  for (std::size_t p = 0; p < rows; ++p)
    for (std::size_t j = 0; j < dim; ++j) {
      const std::size_t i = std::size_t(ids[p]) * dim + j;
      const float g = h.maximize ? -values[p * dim + j] : values[p * dim + j];
      m[i] = b1 * m[i] + w1 * g;
      v[i] = b2 * v[i] + w2 * g * g;
      theta[i] -= step_size * (m[i] / (std::sqrt(v[i]) + eps));
    }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const SparseAdamKernels sparse_adam{step};

}  // namespace tapegrad::kernels::reference
