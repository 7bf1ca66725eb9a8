// src/ops/loss_reference.cpp
//
// cross_entropy's reference kernels: the maths as plain loops, one row at a time, no threads, no
// intrinsics (docs/kernels.md: read these first). logits x is (N, C). The fast kernels
// (loss_fast.cpp) compute the same formula, with a vectorised exponential (exp_f32) where these
// call std::exp, which can move a result by a few float roundings (docs/semantics.md#kernel-sets).
#include <algorithm>
#include <cmath>
#include <limits>

#include "loss_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// Per kept row i (t = target[i] != ignore_index):
//   m = max_j x[i, j]                          (so that no exp overflows)
//   log_sum = log(sum_j exp(x[i, j] - m))      (summed in double)
//   log_softmax(x)[i, j] = (x[i, j] - m) - log_sum
//   loss_i = -log_softmax(x)[i, t]
// mean = sum_i loss_i / count (count = kept rows; none kept: 0 / 0 = NaN, as in PyTorch)
void forward(const float* x, const std::int64_t* target, std::int64_t ignore,
             CrossEntropyReduction reduction, float* loss, float* row_max, float* log_sum,
             std::size_t N, std::size_t C) {
  double total = 0.0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < N; ++i) {
    if (reduction == CrossEntropyReduction::none) loss[i] = 0.0f;
    if (target[i] == ignore) continue;
    const float* row = x + i * C;
    float m = row[0];
    for (std::size_t j = 1; j < C; ++j) m = std::max(m, row[j]);
    double sum = 0.0;
    for (std::size_t j = 0; j < C; ++j) sum += std::exp(row[j] - m);
    row_max[i] = m;
    log_sum[i] = float(std::log(sum));
    const float loss_i = -((row[target[i]] - m) - log_sum[i]);
    if (reduction == CrossEntropyReduction::none) loss[i] = loss_i;
    total += loss_i;
    ++count;
  }
  if (reduction == CrossEntropyReduction::sum) loss[0] = float(total);
  if (reduction == CrossEntropyReduction::mean)
    loss[0] = count == 0 ? std::numeric_limits<float>::quiet_NaN() : float(total / double(count));
}

// dloss_i/dx[i, j] = softmax(x)[i, j] - [j == t]   (softmax = exp(log_softmax))
// dx[i, j] = (softmax(x)[i, j] - [j == t]) * g_i, with g_i = dy / count (mean), dy (sum) or
// dy[i] (none); ignored rows get 0.
void backward(const float* dy, const float* x, const std::int64_t* target, std::int64_t ignore,
              CrossEntropyReduction reduction, std::size_t count, const float* row_max,
              const float* log_sum, float* dx, std::size_t N, std::size_t C) {
  for (std::size_t i = 0; i < N; ++i) {
    const float g = reduction == CrossEntropyReduction::none ? dy[i]
                    : reduction == CrossEntropyReduction::sum
                        ? dy[0]
                        : float(double(dy[0]) / double(count));
    for (std::size_t j = 0; j < C; ++j) {
      if (target[i] == ignore) {
        dx[i * C + j] = 0.0f;
        continue;
      }
      const float softmax = std::exp((x[i * C + j] - row_max[i]) - log_sum[i]);
      const float one_hot = j == std::size_t(target[i]) ? 1.0f : 0.0f;
      dx[i * C + j] = (softmax - one_hot) * g;
    }
  }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const CrossEntropyKernels cross_entropy{forward, backward};

}  // namespace tapegrad::kernels::reference
