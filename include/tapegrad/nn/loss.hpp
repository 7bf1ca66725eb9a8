// include/tapegrad/nn/loss.hpp
//
// CrossEntropyLoss: the module form of ops::cross_entropy (docs/semantics.md#linear-and-the-loss),
// as PyTorch's nn.CrossEntropyLoss for class-index targets. logits (N, C), target (N) -> a loss of
// shape () ("mean", "sum") or (N) ("none"). Targets equal to ignore_index count for nothing.
#pragma once

#include "tapegrad/nn/module.hpp"
#include "tapegrad/ops/loss.hpp"

namespace tapegrad::nn {

/// ignore_index and reduction (libtorch's name): the functional's options, ops/loss.hpp.
using CrossEntropyLossOptions = ops::CrossEntropyOptions;

class CrossEntropyLoss : public Module {
 public:
  /// A reduction other than "mean", "sum" or "none" is a ValueError (check_cross_entropy_options).
  explicit CrossEntropyLoss(CrossEntropyLossOptions options = {});
  /// logits (N, C), target (N) of class ids in [0, C) or ignore_index.
  Tensor forward(const Tensor& logits, const IndexArray& target);
  const CrossEntropyLossOptions& options() const { return options_; }
  /// Prints "CrossEntropyLoss()", whatever the options, as PyTorch (its losses have no extra_repr).
  std::string type_name() const override { return "CrossEntropyLoss"; }

 private:
  CrossEntropyLossOptions options_;
};

}  // namespace tapegrad::nn
