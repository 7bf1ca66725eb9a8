// include/tapegrad/ops/activation.hpp
//
// Activation functions beyond the elementwise basics (relu, tanh and sigmoid are in
// elementwise.hpp). GELU, the Gaussian Error Linear Unit of GPT's feed-forward blocks, in
// PyTorch's two forms, F.gelu(x, approximate="none") and F.gelu(x, approximate="tanh"):
//   "none"   y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))                     (the exact GELU)
//   "tanh"   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))              (GPT-2's approximation)
// and SiLU (also called swish), PyTorch's F.silu, the gate of LLaMA's SwiGLU feed-forward:
//   silu     y = x * sigmoid(x) = x / (1 + exp(-x))
// and squared ReLU (Primer, So et al. 2021; the MLP of the fastest nanoGPT speedruns), PyTorch's
// F.relu(x).square():
//   relu_squared   y = relu(x)^2
// Elementwise, any shape; backward reads the input x only.
#pragma once

#include <string>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// GELU elementwise, x of any shape -> the same shape. `approximate` is "none" (erf form, the
/// default) or "tanh", as in PyTorch; anything else is a ValueError.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");

/// SiLU elementwise, x of any shape -> the same shape: x * sigmoid(x) (src/ops/pointwise.cpp).
Tensor silu(const Tensor& x);

/// Squared ReLU elementwise, x of any shape -> the same shape: relu(x)^2, NaN kept as NaN
/// (src/ops/pointwise.cpp).
Tensor relu_squared(const Tensor& x);

/// LLaMA's gated unit, silu(gate) * up, in one pass: gate and up of one shape -> that shape, the
/// same bits as ops::silu(gate) * up, forward and backward. It saves gate and up only, where the
/// two ops would also keep silu(gate) (one more activation of the MLP's width per layer); backward
/// computes silu(gate) again. Inside an autocast::bf16 scope it keeps gate and up rounded to bf16,
/// so its gradients are those of the rounded values. ShapeError unless the shapes are equal
/// (src/ops/pointwise.cpp).
Tensor swiglu(const Tensor& gate, const Tensor& up);

}  // namespace tapegrad::ops
