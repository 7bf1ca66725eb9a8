// src/ops/pointwise_kernels.hpp (private)
//
// Activations that map each element on its own, each written once as a formula: forward(x) and
// backward(x, dy) = dy * f'(x). One pair of loops runs any of them: pointwise_forward<Op> and
// pointwise_backward<Op>, the references in pointwise.cpp, their fast versions in
// src/kernels/pointwise.cpp. The two differ only in Math, where exp comes from: the C library's
// in the reference, the vectorisable exp_f32 (within 1 ulp) in the fast sets. A new activation is
// a struct here, a one-line op in pointwise.cpp and a line per kernel in src/kernels/pointwise.cpp.
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// SiLU (swish), PyTorch's F.silu, the gate of LLaMA's SwiGLU:
///   y  = x * s,  s = sigmoid(x) = 1 / (1 + exp(-x))          (computed as x / (1 + exp(-x)))
///   dx = dy * s * (1 + x (1 - s))                           (d/dx of x s = s + x s (1 - s))
/// The tails are PyTorch's: exp(-x) = inf gives y = -0, dx = -0; x = -inf gives NaN, x = +inf
/// y = inf and dx = inf * 0 = NaN.
struct Silu {
  template <class Math>
  static float forward(float x) {
    return x / (1.0f + Math::exp(-x));
  }
  template <class Math>
  static float backward(float x, float dy) {
    const float s = 1.0f / (1.0f + Math::exp(-x));
    return dy * s * (1.0f + x * (1.0f - s));
  }
};

/// Squared ReLU (Primer; the MLP of the fastest nanoGPT speedruns), PyTorch's F.relu(x).square():
///   y  = r * r,  r = relu(x) = (x <= 0 ? 0 : x)             (NaN stays NaN, as in PyTorch)
///   dx = (x <= 0 ? 0 : dy * (2 r))                          (square's backward, then relu's)
struct ReluSquared {
  template <class Math>
  static float forward(float x) {
    const float r = x <= 0.0f ? 0.0f : x;
    return r * r;
  }
  template <class Math>
  static float backward(float x, float dy) {
    return x <= 0.0f ? 0.0f : dy * (2.0f * x);
  }
};

/// y[i] = Op(x[i]) for n floats.
template <class Op>
void pointwise_forward(const float* x, float* y, std::size_t n);
/// dy[i] = Op's backward(x[i], dy[i]) in place (dy becomes dx), x the forward's input.
template <class Op>
void pointwise_backward(const float* x, float* dy, std::size_t n);

}  // namespace tapegrad::ops
