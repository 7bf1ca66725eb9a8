// include/tapegrad/ops/loss.hpp
//
// cross_entropy with the semantics of PyTorch's CrossEntropyLoss for class-index targets
// (https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html): log_softmax and
// the negative log-likelihood fused into one op.
#pragma once

#include <cstdint>
#include <string>

#include "tapegrad/core/options.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// cross_entropy's options; nn::CrossEntropyLoss takes them too (nn::CrossEntropyLossOptions).
class CrossEntropyOptions {
 public:
  /// Targets equal to this contribute nothing and are not counted in the mean; default -100.
  TAPEGRAD_ARG(std::int64_t, ignore_index) = -100;
  /// "mean" (over the targets not ignored; default), "sum" or "none" (one loss per row).
  TAPEGRAD_ARG(std::string, reduction) = "mean";
};

/// Throws ValueError, PyTorch's text first, unless the reduction is "mean", "sum" or "none".
/// cross_entropy calls it at every call, nn::CrossEntropyLoss once, at construction.
void check_cross_entropy_options(const CrossEntropyOptions& options, const std::string& where);

/// logits (N, C), target (N) class ids in [0, C) or ignore_index. With "mean", all targets
/// ignored gives NaN (0/0), as in PyTorch. A target out of range is an IndexError naming it.
Tensor cross_entropy(const Tensor& logits, const IndexArray& target,
                     const CrossEntropyOptions& options = {});

}  // namespace tapegrad::ops
