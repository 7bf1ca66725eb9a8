// src/ops/silu_fast.cpp
//
// SiLU's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths and the float operations are silu_reference.cpp's; the exponential
// is exp_f32, inline arithmetic with no branches, so the loops compile to 8 or 16 elements at a
// time, where the C library's expf is a call that no loop around it can vectorise.
#include <cstddef>

#include "../exp_f32.hpp"
#include "silu_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "silu_fast.cpp is compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// The formulas: silu_reference.cpp's.
void forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + detail::exp_f32(-x[i]));
}

void backward(const float* x, float* dy, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float s = 1.0f / (1.0f + detail::exp_f32(-x[i]));
    dy[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
  }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const SiluKernels silu{forward, backward};

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY
