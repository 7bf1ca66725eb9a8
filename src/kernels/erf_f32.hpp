// src/kernels/erf_f32.hpp (private)
//
// erf_f32(x): the error function in float32, for GELU (src/kernels/gelu.cpp). Why not std::erf:
// glibc's erff is a library call that no loop around it can vectorise, and GELU evaluates it
// once per element of the largest activations of a Transformer (4 x d_model per position, in
// forward and again in backward). erf_f32 is inline, branch-free arithmetic, so a loop over it
// compiles to AVX2/AVX-512 code, as exp_f32 does (PyTorch's CPU GELU is vectorised too).
//
// The method, on t = |x|:
//   t < 0.921875      erf(x) = x + x * P(x^2)             P: degree 6, P(s) ~ erf(sqrt s)/sqrt s - 1
//   0.921875 <= t     erf(x) = sign(x) * (1 - e^-t^2 R(1/t))  R: degree 7 in 1/t - 0.6, R(1/t) ~ erfc(t) e^t^2
//   t > 3.95          erf(x) = sign(x)                    (erfc(3.95) < 2^-26: 1 in float)
// Both polynomials are weighted minimax fits (Lawson's iteration in double against mpmath's erf
// and erfc at 40 digits), coefficients rounded to float. Writing the small branch as x + x * P
// keeps the rounding of the constant term 2/sqrt(pi) - 1 out of the leading digits. The large
// branch's e^-t^2 is also the Gaussian density's exponential, so GELU's backward gets it free
// (the two-argument form).
// Accuracy: at most 1.24 ulp from the correctly rounded erf over every float in [0, 4.5]
// (checked exhaustively, once; tests/core/test_erf_f32.cpp checks every 97th), odd by construction.
// Special values as std::erf: erf(+-0) = +-0, erf(+-inf) = +-1, erf(NaN) = NaN. Plain float
// arithmetic (the build has -ffp-contract=off), so the result is the same on every x86-64 CPU.
#pragma once

#include <cmath>

#include "exp_f32.hpp"
#include "../core/set_namespace.hpp"

namespace tapegrad::detail {
inline namespace TAPEGRAD_SET_NAMESPACE {  // one copy per kernel set: kernels/set_namespace.hpp

/// erf(x); `gauss` receives e^(-x^2), which the large branch needs anyway.
inline float erf_f32(float x, float& gauss) {
  const float t = std::fabs(x);
  const float s = x * x;

  // t < 0.921875: x + x * P(s), Horner's rule
  float p = 8.370102296e-05f;
  p = p * s - 8.142707520e-04f;
  p = p * s + 5.201032851e-03f;
  p = p * s - 2.685939893e-02f;
  p = p * s + 1.128369570e-01f;
  p = p * s - 3.761263490e-01f;
  p = p * s + 1.283791661e-01f;
  const float small = x + x * p;

  // t >= 0.921875: 1 - e^-s R(u), u = 1/t - 0.6, Horner's rule; exp_f32 is within 1 ulp.
  // Computed for every x (1/0 = inf at x = 0 is selected away), so the selects below vectorise.
  gauss = exp_f32(-s);
  const float u = 1.0f / t - 0.6f;
  float r = -1.505411323e-02f;
  r = r * u + 4.112976789e-02f;
  r = r * u - 5.251919478e-02f;
  r = r * u + 2.969141304e-02f;
  r = r * u + 4.107657075e-02f;
  r = r * u - 1.755786240e-01f;
  r = r * u + 3.909842074e-01f;
  r = r * u + 2.962874770e-01f;
  const float tail = 1.0f - gauss * r;
  const float large = t > 3.95f ? 1.0f : tail;  // NaN fails every test: stays NaN

  return t < 0.921875f ? small : std::copysign(large, x);
}

inline float erf_f32(float x) {
  float gauss;
  return erf_f32(x, gauss);
}

}  // namespace TAPEGRAD_SET_NAMESPACE
}  // namespace tapegrad::detail
