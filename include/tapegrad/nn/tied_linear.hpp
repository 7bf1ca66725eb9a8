// include/tapegrad/nn/tied_linear.hpp
//
// TiedLinear: y = x W^T (+ b) with a weight that another module owns — weight tying, as GPT-2
// and The Annotated Transformer share the token embedding table (vocab, d_model) with the output
// projection. The SAME Parameter is registered here under "weight": an optimizer, clip_grad_norm_
// and named_parameters() see it once (under the name it was first registered with), both uses
// add into its one gradient, and state_dict() lists both keys with the later one as an alias, so a
// checkpoint stores the table once.
#pragma once

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

class TiedLinear : public Module {
 public:
  /// weight (out_features, in_features), e.g. an Embedding's table; bias none by default.
  /// A weight that is not 2-D is a ShapeError.
  explicit TiedLinear(Parameter weight, bool bias = false);

  /// x (*, in_features) -> (*, out_features), as ops::linear (its ShapeError names this module).
  Tensor forward(const Tensor& x);

  Parameter weight;  ///< registered as "weight": the shared parameter itself
  Parameter bias;    ///< "bias", zeros, (out_features); undefined without bias

  std::string type_name() const override { return "TiedLinear"; }
  /// "in_features=128, out_features=65, bias=False"
  void extra_repr(std::ostream& os) const override;
};

}  // namespace tapegrad::nn
