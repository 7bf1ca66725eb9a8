// src/kernels/loss.cpp
//
// cross_entropy's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths is the reference kernels' (src/ops/loss.cpp); what differs is how
// it runs:
// - The exponential is exp_f32 (src/kernels/exp_f32.hpp), inline arithmetic, so that a row's
//   exponentials are one vectorised loop, where std::exp is a library call per element. The
//   forward writes a block of them to a buffer, then adds the block in double in j order.
// - Threads: rows are independent and split over the pool; the losses are then added on one
//   thread in row order, so the result does not depend on the thread count.
// - backward writes softmax * g for the whole row, then subtracts g at the target.
// Only (max, log_sum) per row is kept for backward, with the logits themselves.
#include <algorithm>
#include <cmath>
#include <limits>

#include "exp_f32.hpp"
#include "scratch.hpp"
#include "../core/parallel.hpp"
#include "../ops/loss_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/loss.cpp is compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// One kept row: its max and log_sum, and its loss -log_softmax(row)[t].
float row_loss(const float* row, std::size_t t, std::size_t C, float& max, float& log_sum) {
  constexpr std::size_t kBlock = 256;
  float e[kBlock];  // exp(row[j] - m), a block of the row at a time
  float m = row[0];
  for (std::size_t j = 1; j < C; ++j) m = std::max(m, row[j]);  // keeps exp() from overflowing
  double sum = 0.0;                                             // in j order, whatever the blocks
  for (std::size_t j0 = 0; j0 < C; j0 += kBlock) {
    const std::size_t len = std::min(kBlock, C - j0);
    for (std::size_t j = 0; j < len; ++j) e[j] = detail::exp_f32(row[j0 + j] - m);  // vectorised
    for (std::size_t j = 0; j < len; ++j) sum += e[j];
  }
  max = m;
  log_sum = static_cast<float>(std::log(sum));
  return -((row[t] - m) - log_sum);
}

// The formula: cross_entropy_forward's. The per-row losses go to `per_row` (N floats, 0 for
// ignored rows), then are reduced on one thread in row order.
void forward(const float* x, const std::int64_t* target, std::int64_t ignore,
             CrossEntropyReduction reduction, float* loss, float* row_max, float* log_sum,
             std::size_t N, std::size_t C) {
  detail::Scratch<float> scratch(reduction == CrossEntropyReduction::none ? 0 : N);
  float* per_row = reduction == CrossEntropyReduction::none ? loss : scratch.data();
  detail::parallel_for(N, detail::rows_grain(C), [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i)
      per_row[i] = target[i] == ignore
                       ? 0.0f
                       : row_loss(x + i * C, std::size_t(target[i]), C, row_max[i], log_sum[i]);
  });
  if (reduction == CrossEntropyReduction::none) return;
  double total = 0.0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < N; ++i) {  // in row order, on one thread
    if (target[i] == ignore) continue;
    total += per_row[i];
    ++count;
  }
  if (reduction == CrossEntropyReduction::mean)
    loss[0] = count == 0 ? std::numeric_limits<float>::quiet_NaN()
                         : static_cast<float>(total / double(count));
  else
    loss[0] = static_cast<float>(total);
}

// The formula: cross_entropy_backward's.
void backward(const float* dy, const float* x, const std::int64_t* target, std::int64_t ignore,
              CrossEntropyReduction reduction, std::size_t count, const float* row_max,
              const float* log_sum, float* dx, std::size_t N, std::size_t C) {
  const float scale = reduction == CrossEntropyReduction::mean
                          ? static_cast<float>(double(dy[0]) / double(count))
                      : reduction == CrossEntropyReduction::sum ? dy[0]
                                                                : 0.0f;
  detail::parallel_for(N, detail::rows_grain(C), [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      float* drow = dx + i * C;
      const std::int64_t t = target[i];
      if (t == ignore) {  // 0 * softmax: 0, or NaN where the row's softmax is NaN
        std::fill_n(drow, C, ignored_row_gradient(x + i * C, C));
        continue;
      }
      const float g = reduction == CrossEntropyReduction::none ? dy[i] : scale;
      const float* row = x + i * C;
      const float m = row_max[i], ls = log_sum[i];
      for (std::size_t j = 0; j < C; ++j)
        drow[j] = detail::exp_f32((row[j] - m) - ls) * g;  // softmax * g
      drow[t] -= g;                                        // - one_hot * g
    }
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::cross_entropy_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::cross_entropy_backward, backward);
