// src/nn/init.cpp: in-place initialisers (torch.nn.init), with PyTorch's fan rules.
#include "tapegrad/nn/init.hpp"

#include <algorithm>
#include <cmath>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/nn/embedding.hpp"

namespace tapegrad::nn::init {

std::pair<double, double> calculate_fan_in_and_fan_out(const Shape& shape) {
  check<ValueError>(
      shape.size() >= 2,
      "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions | "
      "calculate_fan_in_and_fan_out: expected a weight of 2 or more dimensions, got shape ",
      shape);
  double receptive = 1.0;
  for (std::size_t i = 2; i < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

void xavier_uniform_(const Tensor& tensor, double gain, Generator* generator) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor.shape());
  const double std = gain * std::sqrt(2.0 / (fan_in + fan_out));
  const double a = std::sqrt(3.0) * std;  // U(-a, a) has standard deviation a / sqrt(3)
  autograd::NoGradGuard no_grad;
  uniform_(tensor.mutable_data(), -a, a, generator);
}

std::size_t xavier_uniform_parameters_(Module& model, Generator* generator) {
  std::size_t count = 0;
  for (const Parameter& p : model.parameters())
    if (p.dim() > 1) {
      xavier_uniform_(p, 1.0, generator);
      ++count;
    }
  autograd::NoGradGuard no_grad;
  for (const auto& [name, module] : model.named_modules()) {
    const auto* embedding = dynamic_cast<const Embedding*>(module);
    if (embedding == nullptr || !embedding->padding_idx()) continue;
    const std::size_t dim = embedding->weight.shape()[1];
    float* row = embedding->weight.mutable_data().data() +
                 static_cast<std::size_t>(*embedding->padding_idx()) * dim;
    std::fill(row, row + dim, 0.0f);
  }
  return count;
}

}  // namespace tapegrad::nn::init
