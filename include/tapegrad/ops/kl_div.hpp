// include/tapegrad/ops/kl_div.hpp
//
// The Kullback-Leibler divergence loss with the semantics of PyTorch's F.kl_div / nn.KLDivLoss:
// `input` holds LOG-probabilities, `target` probabilities (or log-probabilities with log_target),
//
//     loss = xlogy(t, t) - t * x        (xlogy(0, 0) = 0: a zero target costs nothing)
//     loss = exp(t) * (t - x)           with log_target
//
// then reduced. The Annotated Transformer's LabelSmoothing compares the model's log_softmax with a
// smoothed one-hot distribution through it (reduction "sum"). The target is data: no gradient
// flows to it (the tutorial detaches it too).
#pragma once

#include <string>

#include "tapegrad/core/options.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

class KLDivOptions {
 public:
  /// "mean" (over every element; default), "batchmean" (sum / input.size(0)), "sum" or "none".
  TAPEGRAD_ARG(std::string, reduction) = "mean";
  /// Whether target holds log-probabilities; default false.
  TAPEGRAD_ARG(bool, log_target) = false;
};

namespace ops {

/// input and target of the same shape -> a scalar (or input's shape with "none").
/// dinput = -t * g (or -exp(t) * g with log_target), g the incoming gradient after the reduction.
/// Throws ShapeError for different shapes (or "batchmean" on a scalar), ValueError for an
/// unknown reduction.
Tensor kl_div(const Tensor& input, const Array& target, const KLDivOptions& options = {});

}  // namespace ops
}  // namespace tapegrad
