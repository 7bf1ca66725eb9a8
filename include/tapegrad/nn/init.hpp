// include/tapegrad/nn/init.hpp
//
// Weight initialisation in place, PyTorch's torch.nn.init (libtorch: torch::nn::init). Each
// function writes the tensor's storage under NoGradGuard (one version bump) and draws from the
// given Generator (the default one when null), element by element in row-major order.
#pragma once

#include <utility>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad::nn::init {

/// (fan_in, fan_out) of a weight of shape (out, in, *kernel): in * prod(kernel), out * prod(kernel).
/// Fewer than 2 dimensions is a ValueError (PyTorch's text).
std::pair<double, double> calculate_fan_in_and_fan_out(const Shape& shape);

/// Glorot / Xavier uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), computed as
/// PyTorch does (std = gain * sqrt(2 / (fan_in + fan_out)), a = sqrt(3) * std). The Annotated
/// Transformer applies it to every parameter with more than one dimension.
void xavier_uniform_(const Tensor& tensor, double gain = 1.0, Generator* generator = nullptr);

/// The Annotated Transformer's initialisation of a whole model: xavier_uniform_ on every parameter
/// with more than one dimension (in named_parameters() order), then the padding row of every
/// Embedding with a padding_idx set back to zero. The tutorial's loop overwrites that row with
/// random values, so the <pad> vector stops being zero (pytorch/pytorch#1812); re-zeroing keeps
/// the promise padding_idx makes. Returns the number of parameters initialised.
std::size_t xavier_uniform_parameters_(Module& model, Generator* generator = nullptr);

}  // namespace tapegrad::nn::init
