// src/ops/silu.cpp
//
// SiLU (the sigmoid-weighted linear unit, also called swish), PyTorch's F.silu: the recording. It
// is the gate of the SwiGLU feed-forward (nn/swiglu.hpp). The maths is in the kernels:
// silu_reference.cpp (read it first) and silu_fast.cpp, picked for the CPU by
// kernels::silu_kernels() (docs/kernels.md).
//   y  = x * s,  s = sigmoid(x) = 1 / (1 + exp(-x))          (computed as x / (1 + exp(-x)))
//   dx = dy * s * (1 + x * (1 - s))                           (d/dx of x s = s + x s (1 - s))
// PyTorch's CPU kernels use the same two expressions, so the tails are PyTorch's too: far left
// exp(-x) = inf gives y = -0 and dx = -0, while x = -inf gives -inf / inf = NaN, and x = +inf
// y = inf with dx = inf * 0 = NaN. Saved for backward: x.
#include "silu_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/activation.hpp"

namespace tapegrad::ops {

Tensor silu(const Tensor& x) {
  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::SiluKernels* kernel = &kernels::silu_kernels();
  Array out = Array::from_shape(x.shape());
  kernel->forward(x.data().data(), out.data(), x.numel());
  Tensor y(std::move(out));
  autograd::record("silu", y, {x}, /*saved=*/{x}, [x, kernel](Array dy) {
    kernel->backward(x.data().data(), dy.data(), dy.size());  // dy becomes dx
    x.accumulate_grad(std::move(dy), "silu");
  });
  return y;
}

}  // namespace tapegrad::ops
