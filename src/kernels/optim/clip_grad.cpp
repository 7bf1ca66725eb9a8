// src/kernels/optim/clip_grad.cpp
//
// clip_grad_norm_'s fast norms, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md) and registered as the set's versions of optim::clip_grad_norm and
// clip_grad_norm_of_norms: the reference's maths (src/optim/clip_grad.cpp), with the 2-norm (the
// common case) summed in four interleaved lanes, a fixed order that vectorises, and the other
// norms' branches taken out of the loop's arithmetic (|x| and |x|² instead of pow for p = 1 and 2).
// Where a fast version would be the reference's loop again (the ±inf norms, max and min of |x|;
// the scaling, x·c), every set runs the reference.
#include <cmath>

#include "../../optim/clip_grad_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// The reference's norm of the same values (src/optim/clip_grad.cpp).
double reference(const float* x, std::size_t n, double p) { return optim::clip_grad_norm(x, n, p); }
double reference(const double* x, std::size_t n, double p) {
  return optim::clip_grad_norm_of_norms(x, n, p);
}

// The p-norm of n values, PyTorch's vector_norm: p = inf → max |x|, p = −inf → min |x|,
// p = 0 → the count of non-zeros, else (Σ |x|^p)^(1/p).
template <class T>
double p_norm(const T* x, std::size_t n, double p) {
  if (std::isinf(p)) return reference(x, n, p);  // max or min: no order to choose
  if (p == 2.0) {                                // the common case, in four lanes (i % 4)
    double lane[4] = {0.0, 0.0, 0.0, 0.0};       // added at the end: a fixed order that
    std::size_t i = 0;                           // vectorises; one running sum waits for
    for (; i + 4 <= n; i += 4)                   // each addition
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

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::optim::clip_grad_norm, p_norm<float>);
TAPEGRAD_FAST_KERNEL(tapegrad::optim::clip_grad_norm_of_norms, p_norm<double>);
