// src/erf_f32.hpp (private)
//
// erf_f32(x): the error function in float32, for GELU (ops/activation.cpp). Why not std::erf:
// glibc's erff is a library call that no loop around it can vectorise, and GELU evaluates it
// once per element of the largest activations of a Transformer (4 x d_model per position, in
// forward and again in backward). erf_f32 is inline, branch-free arithmetic, so a loop over it
// compiles to AVX2/AVX-512 code, as exp_f32 does (PyTorch's CPU GELU is vectorised too).
//
// The method, on t = |x|:
//   t < 0.921875      erf(x) = x + x * P(x^2)          P: degree 6, P(s) ~ erf(sqrt s)/sqrt s - 1
//   0.921875 <= t     erf(x) = sign(x) * (1 - e^Q(t))  Q: degree 8, Q(t) ~ log(erfc(t))
//   t > 3.95          erf(x) = sign(x)                 (erfc(3.95) < 2^-26: 1 in float)
// Both polynomials are weighted minimax fits (Lawson's iteration in double against mpmath's erf
// and erfc at 40 digits), coefficients rounded to float. Writing the small branch as x + x * P
// keeps the rounding of the constant term 2/sqrt(pi) - 1 out of the leading digits.
// Accuracy: at most 1.24 ulp from the correctly rounded erf over every float in [0, 4.5]
// (checked exhaustively, once; tests/test_erf_f32.cpp checks every 97th), odd by construction.
// Special values as std::erf: erf(+-0) = +-0, erf(+-inf) = +-1, erf(NaN) = NaN. Plain float
// arithmetic (the build has -ffp-contract=off), so the result is the same on every x86-64 CPU.
#pragma once

#include <cmath>

#include "exp_f32.hpp"

namespace tapegrad::detail {

inline float erf_f32(float x) {
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

  // t >= 0.921875: 1 - e^Q(t), Horner's rule; exp_f32 is within 1 ulp
  float q = -4.379241147e-07f;
  q = q * t - 1.547300599e-05f;
  q = q * t + 4.035775492e-04f;
  q = q * t - 4.076191690e-03f;
  q = q * t + 2.494110353e-02f;
  q = q * t - 1.080699265e-01f;
  q = q * t - 6.334986687e-01f;
  q = q * t - 1.129453540e+00f;
  q = q * t + 1.639960683e-04f;
  const float tail = 1.0f - exp_f32(q);        // computed for every x, so the selects below vectorise
  const float large = t > 3.95f ? 1.0f : tail;  // NaN fails every test: stays NaN

  return t < 0.921875f ? small : std::copysign(large, x);
}

}  // namespace tapegrad::detail
