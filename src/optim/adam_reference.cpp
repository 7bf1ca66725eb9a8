// src/optim/adam_reference.cpp
//
// Adam's reference kernel: the algorithm as PyTorch's documentation writes it
// (https://pytorch.org/docs/stable/generated/torch.optim.Adam.html), one element after another,
// in float, no threads (docs/kernels.md: read this first). The fast kernel (adam_fast.cpp) writes
// the same maths in PyTorch's implementation's order (a lerp for m, the bias corrections folded into
// the step size), which can move a result by a few float roundings (docs/semantics.md#kernel-sets).
#include <cmath>

#include "adam_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// g = ±grad (+ l2·θ)          θ = θ·decay                   (AdamW's decoupled decay first)
// m = β1·m + (1 − β1)·g       v = β2·v + (1 − β2)·g²         vmax = max(vmax, v) if amsgrad
// m̂ = m / (1 − β1^t)          v̂ = v (or vmax) / (1 − β2^t)   θ = θ − lr·m̂ / (sqrt(v̂) + eps)
void step(const AdamStep& h, std::size_t n, float* theta, const float* grad, float* m, float* v,
          float* vmax) {
  // Every scalar is a Python number to PyTorch: computed in double, cast to float once.
  const float lr = float(h.lr), b1 = float(h.beta1), b2 = float(h.beta2), eps = float(h.eps);
  const float w1 = float(1.0 - h.beta1), w2 = float(1.0 - h.beta2);
  const float bc1 = float(1.0 - std::pow(h.beta1, double(h.step)));
  const float bc2 = float(1.0 - std::pow(h.beta2, double(h.step)));
  for (std::size_t i = 0; i < n; ++i) {
    float g = h.maximize ? -grad[i] : grad[i];
    if (h.l2 != 0.0) g += float(h.l2) * theta[i];
    theta[i] *= float(h.decay);
    m[i] = b1 * m[i] + w1 * g;
    v[i] = b2 * v[i] + w2 * g * g;
    float s = v[i];
    if (vmax) s = vmax[i] = (std::isnan(s) || s > vmax[i]) ? s : vmax[i];  // NaN propagates
    theta[i] -= lr * (m[i] / bc1) / (std::sqrt(s / bc2) + eps);
  }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const AdamKernels adam{step};

}  // namespace tapegrad::kernels::reference
