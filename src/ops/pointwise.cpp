// src/ops/pointwise.cpp
//
// The pointwise ops of pointwise_kernels.hpp (SiLU, squared ReLU, clamp) as ops: the reference
// loops, then one op that runs any of them and records its backward. Saved for backward: x.
// src/kernels/pointwise.cpp has the fast loops, which kernels::pick chooses for the CPU.
#include <cmath>
#include <limits>

#include "pointwise_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/activation.hpp"
#include "tapegrad/ops/clamp.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------

namespace {
struct StdMath {  // the C library's exp
  static float exp(float x) { return std::exp(x); }
};
}  // namespace

template <class Op>
void pointwise_forward(Op op, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = op.template forward<StdMath>(x[i]);
}

template <class Op>
void pointwise_backward(Op op, const float* x, float* dy, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dy[i] = op.template backward<StdMath>(x[i], dy[i]);
}

// One copy of each, here: src/kernels/ names them without compiling them for its own set.
template void pointwise_forward<Silu>(Silu, const float*, float*, std::size_t);
template void pointwise_backward<Silu>(Silu, const float*, float*, std::size_t);
template void pointwise_forward<ReluSquared>(ReluSquared, const float*, float*, std::size_t);
template void pointwise_backward<ReluSquared>(ReluSquared, const float*, float*, std::size_t);
template void pointwise_forward<Clamp>(Clamp, const float*, float*, std::size_t);
template void pointwise_backward<Clamp>(Clamp, const float*, float*, std::size_t);

// ---- the ops ------------------------------------------------------------------------------------

namespace {
// y = f(x) elementwise; backward: dx = f's backward(x, dy). `f` holds the op's parameters, if any.
template <class Op>
Tensor pointwise(const Tensor& x, Op f, const char* op) {
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<pointwise_forward<Op>>();
  const auto backward = kernels::pick<pointwise_backward<Op>>();
  Array out = Array::from_shape(x.shape());
  forward(f, x.data().data(), out.data(), x.numel());
  Tensor y(std::move(out));
  autograd::record(op, y, {x}, /*saved=*/{x}, [x, f, backward, op](Array dy) {
    backward(f, x.data().data(), dy.data(), dy.size());  // dy becomes dx
    x.accumulate_grad(std::move(dy), op);
  });
  return y;
}
}  // namespace

Tensor silu(const Tensor& x) { return pointwise(x, Silu{}, "silu"); }

Tensor relu_squared(const Tensor& x) { return pointwise(x, ReluSquared{}, "relu_squared"); }

Tensor clamp(const Tensor& x, std::optional<float> min, std::optional<float> max) {
  check<ValueError>(min || max,
                    "torch.clamp: At least one of 'min' or 'max' must not be None | clamp: "
                    "expected a min or a max, got neither");
  constexpr float inf = std::numeric_limits<float>::infinity();
  return pointwise(x, Clamp{min.value_or(-inf), max.value_or(inf)}, "clamp");
}

}  // namespace tapegrad::ops
