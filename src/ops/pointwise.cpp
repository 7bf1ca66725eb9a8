// src/ops/pointwise.cpp
//
// The pointwise activations of pointwise_kernels.hpp (SiLU, squared ReLU) as ops: the reference
// loops, then one op that runs any of them and records its backward. Saved for backward: x.
// src/kernels/pointwise.cpp has the fast loops, which kernels::pick chooses for the CPU.
#include <cmath>

#include "pointwise_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/activation.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------

namespace {
struct StdMath {  // the C library's exp
  static float exp(float x) { return std::exp(x); }
};
}  // namespace

template <class Op>
void pointwise_forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = Op::template forward<StdMath>(x[i]);
}

template <class Op>
void pointwise_backward(const float* x, float* dy, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dy[i] = Op::template backward<StdMath>(x[i], dy[i]);
}

// One copy of each, here: src/kernels/ names them without compiling them for its own set.
template void pointwise_forward<Silu>(const float*, float*, std::size_t);
template void pointwise_backward<Silu>(const float*, float*, std::size_t);
template void pointwise_forward<ReluSquared>(const float*, float*, std::size_t);
template void pointwise_backward<ReluSquared>(const float*, float*, std::size_t);

// ---- the ops ------------------------------------------------------------------------------------

namespace {
// y = Op(x) elementwise; backward: dx = Op's backward(x, dy).
template <class Op>
Tensor pointwise(const Tensor& x, const char* op) {
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<pointwise_forward<Op>>();
  const auto backward = kernels::pick<pointwise_backward<Op>>();
  Array out = Array::from_shape(x.shape());
  forward(x.data().data(), out.data(), x.numel());
  Tensor y(std::move(out));
  autograd::record(op, y, {x}, /*saved=*/{x}, [x, backward, op](Array dy) {
    backward(x.data().data(), dy.data(), dy.size());  // dy becomes dx
    x.accumulate_grad(std::move(dy), op);
  });
  return y;
}
}  // namespace

Tensor silu(const Tensor& x) { return pointwise<Silu>(x, "silu"); }

Tensor relu_squared(const Tensor& x) { return pointwise<ReluSquared>(x, "relu_squared"); }

}  // namespace tapegrad::ops
