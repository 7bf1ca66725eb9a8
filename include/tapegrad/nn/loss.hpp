// include/tapegrad/nn/loss.hpp
//
// CrossEntropyLoss: the module form of ops::cross_entropy (docs/semantics.md#linear-and-the-loss),
// as PyTorch's nn.CrossEntropyLoss for class-index targets. logits (N, C), target (N) -> a loss of
// shape () ("mean", "sum") or (N) ("none"). Targets equal to ignore_index count for nothing.
#pragma once

#include "tapegrad/nn/module.hpp"
#include "tapegrad/ops/loss.hpp"

namespace tapegrad::nn {

class CrossEntropyLoss : public Module {
 public:
  /// A reduction other than "mean", "sum" or "none" is a ValueError.
  explicit CrossEntropyLoss(CrossEntropyOptions options = {});
  /// logits (N, C), target (N) of class ids in [0, C) or ignore_index.
  Tensor forward(const Tensor& logits, const IndexArray& target);
  const CrossEntropyOptions& options() const { return options_; }
  std::string type_name() const override {
    return "CrossEntropyLoss";
  }  ///< prints "CrossEntropyLoss()"

 private:
  CrossEntropyOptions options_;
};

}  // namespace tapegrad::nn
