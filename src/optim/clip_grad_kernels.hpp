// src/optim/clip_grad_kernels.hpp (private to src/optim)
//
// clip_grad_norm_'s kernels: the references are defined in clip_grad.cpp, the fast versions of the
// norms in src/kernels/optim/clip_grad.cpp (src/core/dispatch.hpp); the scaling has none.
// clip_grad.cpp takes each gradient's norm, the norm of those norms, and scales every gradient.
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::optim {

/// The p-norm of n floats, PyTorch's vector_norm, accumulated in double: p = inf → max |x|,
/// p = −inf → min |x|, p = 0 → the count of non-zeros, else (Σ |x|^p)^(1/p). NaN propagates.
double clip_grad_norm(const float* x, std::size_t n, double p);
/// The same of n doubles: the total norm from the per-parameter norms.
double clip_grad_norm_of_norms(const double* x, std::size_t n, double p);
/// x = x·c, n floats.
void clip_grad_scale(float* x, std::size_t n, float c);

}  // namespace tapegrad::optim
