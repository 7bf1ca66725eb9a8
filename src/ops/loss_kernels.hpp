// src/ops/loss_kernels.hpp (private)
//
// cross_entropy's kernels: the references are defined in loss.cpp, their fast versions in
// src/kernels/loss.cpp (src/core/dispatch.hpp). logits is (N, C), rows contiguous; target holds
// N class ids, each in [0, C) or equal to ignore_index (the op has checked them).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "../core/dispatch.hpp"

namespace tapegrad::kernels {

/// How the per-row losses become the result: PyTorch's reduction="mean", "sum" or "none".
enum class CrossEntropyReduction { mean, sum, none };

/// The gradient of every logit of an ignored row: no loss reaches it, but PyTorch's backward
/// (log_softmax's, after nll_loss's zero) still multiplies the row's softmax by that 0, so it is 0
/// unless the softmax is NaN: a NaN or +inf logit, or every logit -inf. A NaN in a padding row
/// then shows in the gradient, as in PyTorch. Static: each kernel set keeps a copy.
static inline float ignored_row_gradient(const float* row, std::size_t C) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  bool all_neg_inf = true;
  for (std::size_t j = 0; j < C; ++j) {
    if (std::isnan(row[j]) || row[j] == kInf) return std::numeric_limits<float>::quiet_NaN();
    all_neg_inf = all_neg_inf && row[j] == -kInf;
  }
  return all_neg_inf ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
}

}  // namespace tapegrad::kernels

namespace tapegrad::ops {

using kernels::CrossEntropyReduction;

/// loss_i = -log_softmax(x)[i, t_i] for every row i whose target t_i is not ignore_index; into
/// loss: the N loss_i (0 for ignored rows) for `none`, else one float, their sum (`sum`) or
/// their sum / count (`mean`; count = the rows kept, NaN when there are none). For backward,
/// per kept row: row_max = max_j x[i, j] and log_sum = log(sum_j exp(x[i, j] - row_max)) (N
/// floats each; ignored rows' entries are left as they are).
void cross_entropy_forward(const float* logits, const std::int64_t* target,
                           std::int64_t ignore_index, CrossEntropyReduction reduction, float* loss,
                           float* row_max, float* log_sum, std::size_t N, std::size_t C);
/// dx = dL/dlogits (N * C floats, written, not added) from the gradient of the loss dy (N floats
/// for `none`, else one), the forward's row_max and log_sum, and count = the rows kept. An ignored
/// row gets ignored_row_gradient(row) in every column.
void cross_entropy_backward(const float* dy, const float* logits, const std::int64_t* target,
                            std::int64_t ignore_index, CrossEntropyReduction reduction,
                            std::size_t count, const float* row_max, const float* log_sum,
                            float* dx, std::size_t N, std::size_t C);

}  // namespace tapegrad::ops
