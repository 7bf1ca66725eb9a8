// include/tapegrad/ops/loss.hpp
//
// cross_entropy with the semantics of PyTorch's CrossEntropyLoss for class-index targets
// (https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html): log_softmax and
// the negative log-likelihood fused into one op.
#pragma once

#include <cstdint>
#include <string>

#include "tapegrad/tensor.hpp"

namespace tapegrad {

class CrossEntropyOptions {
 public:
  /// Targets equal to this contribute nothing and are not counted in the mean.
  CrossEntropyOptions& ignore_index(std::int64_t v) {
    ignore_index_ = v;
    return *this;
  }
  /// "mean" (over the targets that are not ignored), "sum" or "none" (a loss per row).
  CrossEntropyOptions& reduction(std::string v) {
    reduction_ = std::move(v);
    return *this;
  }
  std::int64_t ignore_index() const { return ignore_index_; }
  const std::string& reduction() const { return reduction_; }

 private:
  std::int64_t ignore_index_ = -100;
  std::string reduction_ = "mean";
};

namespace ops {

/// logits (N, C), target (N) class ids in [0, C) or ignore_index. With "mean", all targets
/// ignored gives NaN (0/0), as in PyTorch. A target out of range is an IndexError naming it.
Tensor cross_entropy(const Tensor& logits, const IndexArray& target,
                     const CrossEntropyOptions& options = {});

}  // namespace ops
}  // namespace tapegrad
