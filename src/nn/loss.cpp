// src/nn/loss.cpp: CrossEntropyLoss, a thin shell around ops::cross_entropy.
#include "tapegrad/nn/loss.hpp"

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn {

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyLossOptions options) : options_(std::move(options)) {
  ops::check_cross_entropy_options(options_, context());
}

Tensor CrossEntropyLoss::forward(const Tensor& logits, const IndexArray& target) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::cross_entropy(logits, target, options_);
}

}  // namespace tapegrad::nn
