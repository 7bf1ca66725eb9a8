// src/nn/activation.cpp: activation modules, thin shells around ops/activation.
#include "tapegrad/nn/activation.hpp"

#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/activation.hpp"

namespace tapegrad::nn {

GELU::GELU(std::string approximate) : approximate_(std::move(approximate)) {
  check<ValueError>(approximate_ == "none" || approximate_ == "tanh",
                    "approximate argument must be either none or tanh. | GELU: expected "
                    "approximate \"none\" or \"tanh\", got \"",
                    approximate_, "\"");
}

Tensor GELU::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::gelu(x, approximate_);
}

void GELU::extra_repr(std::ostream& os) const { os << "approximate='" << approximate_ << "'"; }

Tensor SiLU::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::silu(x);
}

Tensor ReLUSquared::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::relu_squared(x);
}

}  // namespace tapegrad::nn
