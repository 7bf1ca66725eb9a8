// src/kernels/pointwise.cpp
//
// The pointwise ops' fast loops, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The formulas are src/ops/pointwise_kernels.hpp's,
// the same float operations; exp is exp_f32, inline arithmetic with no branches, so the loops
// compile to 8 or 16 elements at a time, where the C library's expf is a call that no loop around
// it can vectorise.
#include <cstddef>

#include "../ops/pointwise_kernels.hpp"
#include "exp_f32.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/pointwise.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

struct FastMath {
  static float exp(float x) { return detail::exp_f32(x); }
};

template <class Op>
void forward(Op op, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = op.template forward<FastMath>(x[i]);
}

template <class Op>
void backward(Op op, const float* x, float* dy, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dy[i] = op.template backward<FastMath>(x[i], dy[i]);
}

void swiglu_forward(const float* g, const float* u, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = tapegrad::ops::Silu{}.forward<FastMath>(g[i]) * u[i];
}

void swiglu_backward(const float* g, const float* u, float* dy, float* du, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    du[i] = dy[i] * tapegrad::ops::Silu{}.forward<FastMath>(g[i]);
    dy[i] = tapegrad::ops::Silu{}.backward<FastMath>(g[i], dy[i] * u[i]);
  }
}

}  // namespace
}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::pointwise_forward<tapegrad::ops::Silu>,
                     forward<tapegrad::ops::Silu>);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::pointwise_backward<tapegrad::ops::Silu>,
                     backward<tapegrad::ops::Silu>);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::pointwise_forward<tapegrad::ops::ReluSquared>,
                     forward<tapegrad::ops::ReluSquared>);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::pointwise_backward<tapegrad::ops::ReluSquared>,
                     backward<tapegrad::ops::ReluSquared>);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::pointwise_forward<tapegrad::ops::Clamp>,
                     forward<tapegrad::ops::Clamp>);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::pointwise_backward<tapegrad::ops::Clamp>,
                     backward<tapegrad::ops::Clamp>);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::swiglu_forward, swiglu_forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::swiglu_backward, swiglu_backward);
