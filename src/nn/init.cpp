// src/nn/init.cpp: in-place initialisers (torch.nn.init), with PyTorch's fan rules.
#include "tapegrad/nn/init.hpp"

#include <cmath>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn::init {

std::pair<double, double> calculate_fan_in_and_fan_out(const Shape& shape) {
  check<ValueError>(shape.size() >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 "
                    "dimensions | calculate_fan_in_and_fan_out: expected a weight of 2 or more dimensions, got shape ",
                    shape);
  double receptive = 1.0;
  for (std::size_t i = 2; i < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

void xavier_uniform_(const Tensor& tensor, double gain, Generator* generator) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor.shape());
  const double std = gain * std::sqrt(2.0 / (fan_in + fan_out));
  const double a = std::sqrt(3.0) * std;   // U(-a, a) has standard deviation a / sqrt(3)
  autograd::NoGradGuard no_grad;
  uniform_(tensor.mutable_data(), -a, a, generator);
}

}  // namespace tapegrad::nn::init
