// src/ops/pointwise.cpp
//
// The pointwise ops of pointwise_kernels.hpp (SiLU, squared ReLU, clamp) as ops: the reference
// loops, then one op that runs any of them and records its backward. Saved for backward: x.
// Then SwiGLU's gate silu(g) * u, the one pointwise op of two inputs.
// src/kernels/pointwise.cpp has the fast loops, which kernels::pick chooses for the CPU.
#include <cmath>
#include <limits>
#include <vector>

#include "../core/bf16_saved.hpp"
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

void swiglu_forward(const float* g, const float* u, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = Silu{}.forward<StdMath>(g[i]) * u[i];
}

void swiglu_backward(const float* g, const float* u, float* dy, float* du, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    du[i] = dy[i] * Silu{}.forward<StdMath>(g[i]);
    dy[i] = Silu{}.backward<StdMath>(g[i], dy[i] * u[i]);
  }
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

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  // y = silu(g) u        dg = silu'(g) (dy u)        du = dy silu(g)        (saved: g and u)
  check<ShapeError>(gate.shape() == up.shape(), autograd::where("swiglu"),
                    ": expected gate and up of one shape, got ", gate.shape(), " and ", up.shape());
  const auto forward = kernels::pick<swiglu_forward>();
  const auto backward = kernels::pick<swiglu_backward>();
  Array out = Array::from_shape(gate.shape());
  forward(gate.data().data(), up.data().data(), out.data(), out.size());
  Tensor y(std::move(out));
  if (!autograd::should_record({gate, up})) return y;
  // Inside an autocast::bf16 scope gate and up are kept in bf16, as autocast's own would be (its
  // products return bf16): half the memory, and backward computes from the rounded values.
  using ::tapegrad::detail::SavedInput;
  SavedInput g = SavedInput::of(gate, true), u = SavedInput::of(up, true);
  std::vector<Tensor> saved;
  if (g.keeps_tensor(true)) saved = {gate, up};
  autograd::record(
      "swiglu", y, std::vector<Tensor>{gate, up}, saved,
      [gate = gate.edge(), up = up.edge(), g = std::move(g), u = std::move(u), backward](Array dy) {
        Array dup = Array::from_shape(dy.shape()), g_widened, u_widened;
        backward(g.values(g_widened), u.values(u_widened), dy.data(), dup.data(), dy.size());
        if (up.requires_grad()) up.accumulate_grad(std::move(dup), "swiglu");
        if (gate.requires_grad()) gate.accumulate_grad(std::move(dy), "swiglu");  // dy became dg
      });
  return y;
}

Tensor clamp(const Tensor& x, std::optional<float> min, std::optional<float> max) {
  check<ValueError>(min || max,
                    "torch.clamp: At least one of 'min' or 'max' must not be None | clamp: "
                    "expected a min or a max, got neither");
  constexpr float inf = std::numeric_limits<float>::infinity();
  return pointwise(x, Clamp{min.value_or(-inf), max.value_or(inf)}, "clamp");
}

}  // namespace tapegrad::ops
