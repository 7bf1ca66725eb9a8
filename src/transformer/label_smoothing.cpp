// src/transformer/label_smoothing.cpp: the smoothed target distribution, then kl_div(..., "sum").
#include "tapegrad/transformer/label_smoothing.hpp"

#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/kl_div.hpp"

namespace tapegrad::nn::transformer {

LabelSmoothing::LabelSmoothing(std::int64_t size, std::int64_t padding_idx, double smoothing)
    : size_(size), padding_idx_(padding_idx), smoothing_(smoothing) {
  check<ValueError>(size >= 1, "LabelSmoothing: expected size >= 1, got ", size);
  check<ValueError>(padding_idx >= 0 && padding_idx < size,
                    "LabelSmoothing: expected padding_idx in [0, ", size, "), got ", padding_idx);
  check<ValueError>(smoothing >= 0.0 && smoothing <= 1.0,
                    "LabelSmoothing: expected smoothing in [0, 1], got ", smoothing);
  check<ValueError>(
      smoothing == 0.0 || size >= 3,
      "LabelSmoothing: expected size >= 3 to spread smoothing over size - 2 classes, got size ",
      size);
}

Tensor LabelSmoothing::forward(const Tensor& x, const IndexArray& target) {
  autograd::ModuleScope scope(type_name(), path());
  const std::string where = autograd::where("label_smoothing");
  // The tutorial asserts x.size(1) == self.size.
  check<ShapeError>(x.dim() == 2 && x.shape()[1] == static_cast<std::size_t>(size_), where,
                    ": expected x of shape (N, ", size_, "), got ", x.shape());
  const std::size_t N = x.shape()[0], C = x.shape()[1];
  check<ShapeError>(target.dimension() == 1 && target.shape()[0] == N, where,
                    ": expected target of shape (", N, ",), got ", target.shape());
  for (std::size_t r = 0; r < N; ++r)
    if (target(r) < 0 || target(r) >= size_)
      fail<IndexError>("index ", target(r), " is out of bounds for dimension 1 with size ", size_,
                       " | ", where, ": expected targets in [0, ", size_, "), got ", target(r),
                       " at position ", r);
  // fill_(smoothing / (size - 2)) and scatter_(confidence): Python doubles cast to float
  const float spread =
      smoothing_ == 0.0 ? 0.0f : static_cast<float>(smoothing_ / double(size_ - 2));
  const auto confidence = static_cast<float>(1.0 - smoothing_);
  true_dist = Array::from_shape({N, C});
  const auto pad = static_cast<std::size_t>(padding_idx_);
  for (std::size_t r = 0; r < N; ++r) {
    float* row = true_dist.data() + r * C;
    if (target(r) == padding_idx_) {
      std::fill(row, row + C, 0.0f);
      continue;
    }
    std::fill(row, row + C, spread);
    row[static_cast<std::size_t>(target(r))] = confidence;
    row[pad] = 0.0f;
  }
  return ops::kl_div(x, true_dist, KLDivOptions().reduction("sum"));
}

void LabelSmoothing::extra_repr(std::ostream& os) const {
  os << "size=" << size_ << ", padding_idx=" << padding_idx_
     << ", smoothing=" << py_float(smoothing_);
}

}  // namespace tapegrad::nn::transformer
