// include/tapegrad/nn/linear.hpp
//
// Linear: y = x W^T + b, PyTorch's layout. weight (out_features, in_features), bias
// (out_features); x (*, in_features) -> y (*, out_features). Both are initialised from
// U(-1/sqrt(in_features), 1/sqrt(in_features)) — what PyTorch's kaiming_uniform_(a = sqrt(5)) and
// its bias rule reduce to — weight first, then bias, from the module's Generator
// (https://pytorch.org/docs/stable/generated/torch.nn.Linear.html).
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn {

class LinearOptions {
 public:
  LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}

  /// Size of each input sample, >= 0.
  TAPEGRAD_ARG(std::int64_t, in_features);
  /// Size of each output sample, >= 0.
  TAPEGRAD_ARG(std::int64_t, out_features);
  /// Learn an additive bias (without one, no "bias" is registered); default true.
  TAPEGRAD_ARG(bool, bias) = true;
};

class Linear : public Module {
 public:
  /// Negative sizes are a ValueError. A null generator means the default one.
  explicit Linear(LinearOptions options, std::shared_ptr<Generator> generator = nullptr);
  Linear(std::int64_t in_features, std::int64_t out_features);

  /// x: (*, in_features) -> (*, out_features). A wrong last dimension is a ShapeError
  /// ("mat1 and mat2 shapes cannot be multiplied (10x8 and 16x11) | Linear 'out': ...").
  Tensor forward(const Tensor& x);
  /// Draws weight, then bias, again from U(-1/sqrt(in), 1/sqrt(in)).
  void reset_parameters();
  const LinearOptions& options() const { return options_; }

  Parameter weight;  ///< registered as "weight", (out_features, in_features)
  Parameter bias;    ///< registered as "bias", (out_features); undefined when bias(false)

  std::string type_name() const override { return "Linear"; }
  void extra_repr(
      std::ostream& os) const override;  ///< "in_features=16, out_features=11, bias=True"

 private:
  LinearOptions options_;
  std::shared_ptr<Generator> generator_;
};

}  // namespace tapegrad::nn
