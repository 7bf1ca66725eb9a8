// src/nn/loss.cpp: CrossEntropyLoss, a thin shell around ops::cross_entropy.
#include "tapegrad/nn/loss.hpp"

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn {

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyOptions options) : options_(std::move(options)) {
  const std::string& r = options_.reduction();
  check<ValueError>(r == "mean" || r == "sum" || r == "none", r,
                    " is not a valid value for reduction | ", type_name(),
                    ": expected reduction 'mean', 'sum' or 'none', got '", r, "'");
}

Tensor CrossEntropyLoss::forward(const Tensor& logits, const IndexArray& target) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::cross_entropy(logits, target, options_);
}

}  // namespace tapegrad::nn
