// src/ops/gelu_kernels.hpp (private)
//
// GELU's kernels: the references are defined in activation.cpp, their fast versions in
// src/kernels/gelu.cpp (src/core/dispatch.hpp). Every pointer holds n floats.
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// y = gelu(x) and, when d is not null, d = gelu'(x), which backward multiplies by. tanh_form:
/// PyTorch's approximate="tanh", else the exact (erf) form.
void gelu_forward(const float* x, float* y, float* d, std::size_t n, bool tanh_form);
/// dy = dy * d in place (dy becomes dx), d from the forward.
void gelu_backward(float* dy, const float* d, std::size_t n);

}  // namespace tapegrad::ops
