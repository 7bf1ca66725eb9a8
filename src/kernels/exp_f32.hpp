// src/kernels/exp_f32.hpp (private)
//
// exp_f32(x): e^x in float32, the one exponential of tapegrad's float kernels (softmax,
// log_softmax, cross_entropy, attention, exp, sigmoid, kl_div). Why not std::exp: glibc's expf is a library call
// that no loop around it can vectorise, and in W1 cross_entropy spends most of its time there.
// exp_f32 is inline arithmetic with no branches, so a loop over it compiles to AVX-512/AVX2
// code: 16 or 8 exponentials at a time. PyTorch does the same on CPU (Sleef's vectorised expf).
//
// Accuracy: within 1 ulp of the correctly rounded e^x for every float (checked exhaustively, all
// 2.24 billion floats in [-104, 89], once; tests/core/test_exp_f32.cpp checks every 61st). Special
// values as std::exp: exp(NaN) = NaN, exp(+inf) = +inf, exp(-inf) = 0, e^x > FLT_MAX gives +inf,
// tiny results are subnormal and then 0. The arithmetic is plain float, and the build keeps it so
// (-ffp-contract=off: no fused multiply-adds; no fast-math), so the result is the same on every
// x86-64 CPU, whatever it vectorises with.
//
// The method (Cephes' expf):  e^x = 2^n * e^r,  n = round(x / ln 2),  r = x - n ln 2 in
// [-ln2/2, ln2/2];  e^r by a degree-7 polynomial (minimax on that interval);  2^n put in the
// exponent bits, in two halves so that n = -149 .. 128 all work.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

#include "../core/set_namespace.hpp"

namespace tapegrad::detail {
inline namespace TAPEGRAD_SET_NAMESPACE {  // one copy per kernel set: kernels/set_namespace.hpp

inline float exp_f32(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;     // ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 bits, so
  constexpr float kLn2Lo = -2.12194440e-4f;  // n * kLn2Hi is exact for |n| < 2^15
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: (v + kRound) - kRound rounds v to an integer
  constexpr float kOverflow = 88.72283905206835f;  // above: e^x > FLT_MAX
  constexpr float kUnderflow = -103.97207708f;     // below: e^x < half the smallest subnormal

  // Clamped so that n stays in range (NaN fails both tests and becomes kUnderflow, so that the
  // conversion to int below is always defined); out-of-range and NaN inputs are handled at the end.
  const float xc = x > kOverflow ? kOverflow : (x >= kUnderflow ? x : kUnderflow);
  const float n = (xc * kLog2e + kRound) - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;

  // e^r = 1 + r + r^2 * P(r), Horner's rule
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = (p * r2 + r) + 1.0f;

  // 2^n as two normal floats 2^h * 2^(n - h): n = -150 .. 128 is outside one float's exponent range.
  const auto ni = static_cast<std::int32_t>(n);
  const std::int32_t h = ni / 2;
  const float scale_a = std::bit_cast<float>((h + 127) << 23);
  const float scale_b = std::bit_cast<float>((ni - h + 127) << 23);
  const float y = (er * scale_a) * scale_b;

  if (x > kOverflow) return std::numeric_limits<float>::infinity();
  if (x < kUnderflow) return 0.0f;
  return x != x ? x : y;  // NaN stays NaN
}

}  // namespace TAPEGRAD_SET_NAMESPACE
}  // namespace tapegrad::detail
