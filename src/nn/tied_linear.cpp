// src/nn/tied_linear.cpp: a Linear whose weight belongs to another module (weight tying).
#include "tapegrad/nn/tied_linear.hpp"

#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include <xtensor/xbuilder.hpp>

#include "tapegrad/ops/matmul.hpp"

namespace tapegrad::nn {

TiedLinear::TiedLinear(Parameter w, bool with_bias) {
  check<ShapeError>(w.defined() && w.dim() == 2,
                    "TiedLinear: expected a weight of shape (out_features, in_features), got ",
                    w.defined() ? str(w.shape()) : std::string("an empty handle"));
  weight = register_parameter("weight", w);
  if (with_bias) bias = register_parameter("bias", Parameter(xt::zeros<float>({w.shape()[0]})));
}

Tensor TiedLinear::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::linear(x, weight, bias);
}

void TiedLinear::extra_repr(std::ostream& os) const {
  os << "in_features=" << weight.shape()[1] << ", out_features=" << weight.shape()[0]
     << ", bias=" << (bias.defined() ? "True" : "False");
}

}  // namespace tapegrad::nn
