// src/ops/silu_reference.cpp
//
// SiLU's reference kernels: the formulas as plain loops with the C library's exp (docs/kernels.md:
// read these first). The fast kernels (silu_fast.cpp) use the same float operations with
// tapegrad's vectorisable exp_f32 (within 1 ulp of e^x), so the two differ by a float rounding or
// two (docs/semantics.md#kernel-sets).
#include <cmath>

#include "silu_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// y = x * s,  s = sigmoid(x) = 1 / (1 + exp(-x))         (computed as x / (1 + exp(-x)))
void forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// dx = dy * (s + x s (1 - s)) = dy * s * (1 + x (1 - s))
void backward(const float* x, float* dy, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-x[i]));
    dy[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
  }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const SiluKernels silu{forward, backward};

}  // namespace tapegrad::kernels::reference
