// include/tapegrad/nn/init.hpp
//
// Weight initialisation in place, PyTorch's torch.nn.init (libtorch: torch::nn::init). Each
// function writes the tensor's storage under NoGradGuard (one version bump) and draws from the
// given Generator (the default one when null), element by element in row-major order.
#pragma once

#include <utility>

#include "tapegrad/random.hpp"
#include "tapegrad/tensor.hpp"

namespace tapegrad::nn::init {

/// (fan_in, fan_out) of a weight of shape (out, in, *kernel): in * prod(kernel), out * prod(kernel).
/// Fewer than 2 dimensions is a ValueError (PyTorch's text).
std::pair<double, double> calculate_fan_in_and_fan_out(const Shape& shape);

/// Glorot / Xavier uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), computed as
/// PyTorch does (std = gain * sqrt(2 / (fan_in + fan_out)), a = sqrt(3) * std). The Annotated
/// Transformer applies it to every parameter with more than one dimension.
void xavier_uniform_(const Tensor& tensor, double gain = 1.0, Generator* generator = nullptr);

}  // namespace tapegrad::nn::init
