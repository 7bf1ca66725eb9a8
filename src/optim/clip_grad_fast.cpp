// src/optim/clip_grad_fast.cpp
//
// clip_grad_norm_'s fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md): clip_grad_reference.cpp's maths, with the 2-norm (the common case) summed in
// four interleaved lanes, a fixed order that vectorises, and the other norms' branches taken out of
// the loop's arithmetic (|x| and |x|² instead of pow for p = 1 and 2).
#include <algorithm>
#include <cmath>

#include "clip_grad_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "clip_grad_fast.cpp is compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// The p-norm of n values, PyTorch's vector_norm: p = inf → max |x|, p = −inf → min |x|,
// p = 0 → the count of non-zeros, else (Σ |x|^p)^(1/p).
template <class T>
double p_norm(const T* x, std::size_t n, double p) {
  if (std::isinf(p)) {
    double best = n == 0 ? 0.0 : std::abs(double(x[0]));
    for (std::size_t i = 0; i < n; ++i) {
      const double a = std::abs(double(x[i]));
      if (std::isnan(a)) return a;  // max and min propagate NaN, as torch's do
      best = p > 0 ? std::max(best, a) : std::min(best, a);
    }
    return best;
  }
  if (p == 2.0) {                           // the common case, in four lanes (i % 4)
    double lane[4] = {0.0, 0.0, 0.0, 0.0};  // added at the end: a fixed order that
    std::size_t i = 0;                      // vectorises; one running sum waits for
    for (; i + 4 <= n; i += 4)              // each addition
      for (std::size_t l = 0; l < 4; ++l) lane[l] += double(x[i + l]) * double(x[i + l]);
    for (; i < n; ++i) lane[i % 4] += double(x[i]) * double(x[i]);
    return std::sqrt((lane[0] + lane[1]) + (lane[2] + lane[3]));
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = std::abs(double(x[i]));
    if (p == 0.0)
      sum += a != 0.0 ? 1.0 : 0.0;
    else if (p == 1.0)
      sum += a;
    else
      sum += std::pow(a, p);
  }
  if (p == 0.0 || p == 1.0) return sum;
  return std::pow(sum, 1.0 / p);
}

double norm(const float* x, std::size_t n, double p) { return p_norm(x, n, p); }
double norm_of_norms(const double* x, std::size_t n, double p) { return p_norm(x, n, p); }

void scale(float* x, std::size_t n, float c) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= c;
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const ClipGradKernels clip_grad{norm, norm_of_norms, scale};

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY
