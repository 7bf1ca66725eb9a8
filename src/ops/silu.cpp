// src/ops/silu.cpp
//
// SiLU (the sigmoid-weighted linear unit, also called swish), PyTorch's F.silu, forward and
// backward side by side. It is the gate of the SwiGLU feed-forward (nn/swiglu.hpp). The kernels are
// plain loops over contiguous memory; exp_f32 is inline, so they vectorise.
//   y  = x * s,  s = sigmoid(x) = 1 / (1 + exp(-x))          (computed as x / (1 + exp(-x)))
//   dx = dy * s * (1 + x * (1 - s))                           (d/dx of x s = s + x s (1 - s))
// PyTorch's CPU kernels use the same two expressions, so the tails are PyTorch's too: far left
// exp(-x) = inf gives y = -0 and dx = -0, while x = -inf gives -inf / inf = NaN, and x = +inf
// y = inf with dx = inf * 0 = NaN. Saved for backward: x.
#include <cstddef>

#include "../exp_f32.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/activation.hpp"

namespace tapegrad::ops {

namespace {
void silu_forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + ::tapegrad::detail::exp_f32(-x[i]));
}

// dy becomes dx in place.
void silu_backward(const float* x, float* dy, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float s = 1.0f / (1.0f + ::tapegrad::detail::exp_f32(-x[i]));
    dy[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
  }
}
}  // namespace

Tensor silu(const Tensor& x) {
  Array out = Array::from_shape(x.shape());
  silu_forward(x.data().data(), out.data(), x.numel());
  Tensor y(std::move(out));
  autograd::record("silu", y, {x}, /*saved=*/{x}, [x](Array dy) {
    silu_backward(x.data().data(), dy.data(), dy.size());
    x.accumulate_grad(std::move(dy), "silu");
  });
  return y;
}

}  // namespace tapegrad::ops
