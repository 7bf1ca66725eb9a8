// src/optim/clip_grad_reference.cpp
//
// clip_grad_norm_'s reference kernels: the p-norm as PyTorch's documentation of vector_norm writes
// it (https://pytorch.org/docs/stable/generated/torch.linalg.vector_norm.html), one element after
// another in double, and the scaling (docs/kernels.md: read this first). The fast kernels
// (clip_grad_fast.cpp) add the squares of the 2-norm in four interleaved lanes, which can move the
// norm by a few double roundings and so the float scale by one rounding
// (docs/semantics.md#kernel-sets).
#include <algorithm>
#include <cmath>

#include "clip_grad_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// p = ±inf: max (min) of |x|;   p = 0: #{x ≠ 0};   else (Σ |x|^p)^(1/p)
template <class T>
double p_norm(const T* x, std::size_t n, double p) {
  if (std::isinf(p)) {
    double best = n == 0 ? 0.0 : std::abs(double(x[0]));
    for (std::size_t i = 0; i < n; ++i) {
      const double a = std::abs(double(x[i]));
      if (std::isnan(a)) return a;  // NaN propagates, as torch's max and min do
      best = p > 0 ? std::max(best, a) : std::min(best, a);
    }
    return best;
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    sum += p == 0.0 ? (x[i] != 0 ? 1.0 : 0.0) : std::pow(std::abs(double(x[i])), p);
  return p == 0.0 ? sum : std::pow(sum, 1.0 / p);
}

double norm(const float* x, std::size_t n, double p) { return p_norm(x, n, p); }
double norm_of_norms(const double* x, std::size_t n, double p) { return p_norm(x, n, p); }

// x = c·x
void scale(float* x, std::size_t n, float c) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= c;
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const ClipGradKernels clip_grad{norm, norm_of_norms, scale};

}  // namespace tapegrad::kernels::reference
