// include/tapegrad/transformer/label_smoothing.hpp
//
// LabelSmoothing(size, padding_idx, smoothing): The Annotated Transformer's loss. Instead of a
// one-hot target it builds a distribution with `1 - smoothing` on the correct class and the
// rest spread evenly over the other classes except padding,
//
//     true_dist[r, c] = smoothing / (size - 2)          every class ...
//     true_dist[r, target[r]] = 1 - smoothing           ... but the target
//     true_dist[r, padding_idx] = 0                     padding is never a prediction
//     true_dist[r, :] = 0 where target[r] == padding_idx   padding positions cost nothing
//
// and returns kl_div(x, true_dist, reduction "sum") for x (N, size) log-probabilities. With
// smoothing = 0 this is the summed negative log-likelihood of the non-padding targets.
#pragma once

#include <cstdint>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn::transformer {

class LabelSmoothing : public Module {
 public:
  /// size >= 3 when smoothing > 0 (two classes are excluded from the spread), padding_idx in
  /// [0, size), smoothing in [0, 1]; ValueError otherwise.
  LabelSmoothing(std::int64_t size, std::int64_t padding_idx, double smoothing = 0.0);

  /// x (N, size) log-probabilities, target (N) class ids in [0, size) -> a scalar (the sum).
  /// ShapeError for other shapes, IndexError for a target out of range.
  Tensor forward(const Tensor& x, const IndexArray& target);

  Array true_dist;  ///< the target distribution of the last forward, (N, size)

  std::string type_name() const override { return "LabelSmoothing"; }
  void extra_repr(std::ostream& os) const override;  ///< "size=11, padding_idx=0, smoothing=0.0"

 private:
  std::int64_t size_, padding_idx_;
  double smoothing_;
};

}  // namespace tapegrad::nn::transformer
