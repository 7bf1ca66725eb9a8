// src/ops/pointwise_kernels.hpp (private)
//
// Ops that map each element on its own, each written once as a formula: forward(x) and
// backward(x, dy) = dy * f'(x). One pair of loops runs any of them: pointwise_forward<Op> and
// pointwise_backward<Op>, the references in pointwise.cpp, their fast versions in
// src/kernels/pointwise.cpp. The two differ only in Math, where exp comes from: the C library's
// in the reference, the vectorisable exp_f32 (within 1 ulp) in the fast sets. A new op is a
// struct here, a one-line op in pointwise.cpp and a line per kernel in src/kernels/pointwise.cpp.
// An op with parameters (clamp's bounds; hardtanh's, leaky_relu's slope) keeps them as the
// struct's members: the loops take the struct by value, and the op's backward captures it.
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
  float forward(float x) const {
    return x / (1.0f + Math::exp(-x));
  }
  template <class Math>
  float backward(float x, float dy) const {
    const float s = 1.0f / (1.0f + Math::exp(-x));
    return dy * s * (1.0f + x * (1.0f - s));
  }
};

/// Squared ReLU (Primer; the MLP of the fastest nanoGPT speedruns), PyTorch's F.relu(x).square():
///   y  = r * r,  r = relu(x) = (x <= 0 ? 0 : x)             (NaN stays NaN, as in PyTorch)
///   dx = (x <= 0 ? 0 : dy * (2 r))                          (square's backward, then relu's)
struct ReluSquared {
  template <class Math>
  float forward(float x) const {
    const float r = x <= 0.0f ? 0.0f : x;
    return r * r;
  }
  template <class Math>
  float backward(float x, float dy) const {
    return x <= 0.0f ? 0.0f : dy * (2.0f * x);
  }
};

/// Clamp, PyTorch's torch.clamp(x, min=lo, max=hi), with its parameters as members:
///   y  = min(max(x, lo), hi)                                (lo > hi: every y is hi)
///   dx = (lo <= x <= hi ? dy : 0)                           (both bounds pass the gradient)
/// NaN as PyTorch 1.13: a NaN x, lo or hi gives y = NaN, and dx = 0 (no comparison holds).
/// A missing bound is an infinite one.
struct Clamp {
  float lo, hi;
  template <class Math>
  float forward(float x) const {
    if (x != x || lo != lo || hi != hi) return x + lo + hi;  // NaN
    const float y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
  template <class Math>
  float backward(float x, float dy) const {
    return x >= lo && x <= hi ? dy : 0.0f;
  }
};

/// SwiGLU's gate, silu(g) * u, fused: the forward of silu then mul, and their backwards in the
/// same float operations (so the bits of ops::silu(g) * u):
///   y  = silu(g) u
///   du = dy silu(g)        dg = silu's backward(g, dy u)
void swiglu_forward(const float* g, const float* u, float* y, std::size_t n);
/// dy becomes dg in place; du is written.
void swiglu_backward(const float* g, const float* u, float* dy, float* du, std::size_t n);

/// y[i] = op.forward(x[i]) for n floats.
template <class Op>
void pointwise_forward(Op op, const float* x, float* y, std::size_t n);
/// dy[i] = op.backward(x[i], dy[i]) in place (dy becomes dx), x the forward's input.
template <class Op>
void pointwise_backward(Op op, const float* x, float* dy, std::size_t n);

}  // namespace tapegrad::ops
