// include/tapegrad/nn/activation.hpp
//
// Activation modules: thin shells around the functions of ops/activation.hpp, for models that
// list their layers as modules (PyTorch's nn.GELU, nn.SiLU; ReLUSquared has no PyTorch module:
// it is F.relu(x).square()). They hold no parameters and no buffers.
#pragma once

#include <string>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// GELU, PyTorch's nn.GELU(approximate="none" | "tanh"): y = gelu(x) elementwise, any shape.
class GELU : public Module {
 public:
  /// "none" (the erf form, default) or "tanh"; anything else is a ValueError.
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x);
  const std::string& approximate() const { return approximate_; }

  std::string type_name() const override { return "GELU"; }
  void extra_repr(std::ostream& os) const override;  ///< "approximate='none'", as PyTorch prints it

 private:
  std::string approximate_;
};

/// SiLU, PyTorch's nn.SiLU(): y = x * sigmoid(x) elementwise, any shape.
class SiLU : public Module {
 public:
  Tensor forward(const Tensor& x);

  std::string type_name() const override { return "SiLU"; }
};

/// Squared ReLU: y = relu(x)^2 elementwise, any shape (the GPT's mlp "relu_squared").
class ReLUSquared : public Module {
 public:
  Tensor forward(const Tensor& x);

  std::string type_name() const override { return "ReLUSquared"; }
};

}  // namespace tapegrad::nn
