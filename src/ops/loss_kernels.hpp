// src/ops/loss_kernels.hpp (private)
//
// cross_entropy's kernels: the references are defined in loss.cpp, their fast versions in
// src/kernels/loss.cpp (src/core/dispatch.hpp). logits is (N, C), rows contiguous; target holds
// N class ids, each in [0, C) or equal to ignore_index (the op has checked them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::kernels {

/// How the per-row losses become the result: PyTorch's reduction="mean", "sum" or "none".
enum class CrossEntropyReduction { mean, sum, none };

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
/// for `none`, else one), the forward's row_max and log_sum, and count = the rows kept.
void cross_entropy_backward(const float* dy, const float* logits, const std::int64_t* target,
                            std::int64_t ignore_index, CrossEntropyReduction reduction,
                            std::size_t count, const float* row_max, const float* log_sum,
                            float* dx, std::size_t N, std::size_t C);

}  // namespace tapegrad::ops
