// src/ops/loss.cpp
//
// cross_entropy = log_softmax + negative log-likelihood, fused into one op (PyTorch's
// CrossEntropyLoss, docs/semantics.md#linear-and-the-loss), because it is the hot path of every
// training step (W1: N = 16384 rows of C = 64 logits):
//   forward, per kept row i (target t_i != ignore_index):
//     m_i = max_j x[i, j]        log_s_i = log(sum_j exp(x[i, j] - m_i))      (sum in double)
//     (exp is exp_f32, src/exp_f32.hpp: the row's exponentials are one vectorised loop)
//     loss_i = -log_softmax(x)[i, t_i] = -((x[i, t_i] - m_i) - log_s_i)
//   reduction: "mean" = sum of loss_i / count (count = kept rows; all ignored: 0/0 = NaN),
//              "sum" = sum of loss_i, "none" = the loss_i themselves (0 for ignored rows).
//   backward: dx[i, j] = (exp((x[i, j] - m_i) - log_s_i) - [j == t_i]) * g_i   for kept rows,
//             0 for ignored rows; g_i = dL / count ("mean"), dL ("sum") or dL[i] ("none").
// Only (m_i, log_s_i) per row is kept for backward, with the logits themselves.
// Threads (threads.hpp): rows are independent and split over the threads; the losses are then
// summed on one thread in row order, so the result does not depend on the thread count.
#include "tapegrad/ops/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../exp_f32.hpp"
#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

namespace {
enum class Reduction { mean, sum, none };

struct RowStats {  // what backward needs of one row's log-softmax
  float max;
  float log_sum;
};
}  // namespace

void check_cross_entropy_options(const CrossEntropyOptions& options, const std::string& where) {
  const std::string& r = options.reduction();
  check<ValueError>(r == "mean" || r == "sum" || r == "none", r,
                    " is not a valid value for reduction | ", where,
                    ": expected reduction \"mean\", \"sum\" or \"none\", got \"", r, "\"");
}

Tensor cross_entropy(const Tensor& logits, const IndexArray& target,
                     const CrossEntropyOptions& options) {
  const std::string where = autograd::where("cross_entropy");
  check_cross_entropy_options(options, where);
  const std::string& r = options.reduction();
  const Reduction reduction = r == "mean"  ? Reduction::mean
                              : r == "sum" ? Reduction::sum
                                           : Reduction::none;
  const Shape& s = logits.shape();
  check<ShapeError>(s.size() == 2, where,
                    ": expected logits of shape (N, C) and target of shape (N,), got ", s, " and ",
                    target.shape(), "; flatten (B, T, C) logits to (B * T, C) with reshape");
  check<ShapeError>(
      target.dimension() == 1, "0D or 1D target tensor expected, multi-target not supported | ",
      where, ": expected target of shape (", s[0], ",) for logits ", s, ", got ", target.shape());
  check<ShapeError>(target.size() == s[0], "Expected input batch_size (", s[0],
                    ") to match target batch_size (", target.size(), "). | ", where,
                    ": expected target of shape (", s[0], ",) for logits ", s, ", got ",
                    target.shape());
  const std::size_t N = s[0], C = s[1];
  const std::int64_t ignore = options.ignore_index();
  const auto num_classes = static_cast<std::int64_t>(C);
  for (std::size_t i = 0; i < N; ++i) {
    const std::int64_t t = target.data()[i];
    check<IndexError>(t == ignore || (0 <= t && t < num_classes), "Target ", t,
                      " is out of bounds. | ", where, ": expected targets in [0, ", num_classes,
                      ") or ignore_index ", ignore, ", got ", t, " at position ", i);
  }

  std::vector<RowStats> stats(N);
  std::vector<float> row_loss(N, 0.0f);  // 0 for ignored rows
  const float* x = logits.data().data();
  // Rows worth a thread: about 64 Ki logits (vectorised, an exp costs about a nanosecond; waking a
  // thread costs several microseconds, more than W1-S's whole 512 x 16 loss).
  const std::size_t grain =
      std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(C, 1));
  detail::parallel_for(N, grain, [&](std::size_t first, std::size_t last) {
    constexpr std::size_t kBlock = 256;
    float e[kBlock];  // exp(x[i, j] - m_i), a block of a row at a time
    for (std::size_t i = first; i < last; ++i) {
      const std::int64_t t = target.data()[i];
      if (t == ignore) continue;
      const float* row = x + i * C;
      float m = row[0];
      for (std::size_t j = 1; j < C; ++j) m = std::max(m, row[j]);  // keeps exp() from overflowing
      double sum = 0.0;  // in j order, whatever the blocks
      for (std::size_t j0 = 0; j0 < C; j0 += kBlock) {
        const std::size_t len = std::min(kBlock, C - j0);
        for (std::size_t j = 0; j < len; ++j)
          e[j] = detail::exp_f32(row[j0 + j] - m);  // vectorised
        for (std::size_t j = 0; j < len; ++j) sum += e[j];
      }
      const auto log_sum = static_cast<float>(std::log(sum));
      stats[i] = {m, log_sum};
      row_loss[i] = -((row[t] - m) - log_sum);
    }
  });
  Array losses = Array::from_shape(reduction == Reduction::none ? Shape{N} : Shape{});
  double total = 0.0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < N; ++i) {  // in row order, on one thread
    if (reduction == Reduction::none) losses.data()[i] = row_loss[i];
    if (target.data()[i] == ignore) continue;
    total += row_loss[i];
    ++count;
  }
  if (reduction == Reduction::mean)
    losses() = count == 0 ? std::numeric_limits<float>::quiet_NaN()
                          : static_cast<float>(total / double(count));
  if (reduction == Reduction::sum) losses() = static_cast<float>(total);
  Tensor y(std::move(losses));

  autograd::record("cross_entropy", y, {logits}, {logits},
                   [logits, target, ignore, reduction, count, stats = std::move(stats)](Array dy) {
                     const std::size_t n = logits.shape()[0], c = logits.shape()[1];
                     const float* xs = logits.data().data();
                     Array dx = Array::from_shape(logits.shape());
                     float* out = dx.data();
                     const float scale = reduction == Reduction::mean
                                             ? static_cast<float>(double(dy()) / double(count))
                                         : reduction == Reduction::sum ? dy()
                                                                       : 0.0f;
                     const std::size_t rows_grain = std::max<std::size_t>(
                         1, (std::size_t{1} << 16) / std::max<std::size_t>(c, 1));
                     detail::parallel_for(n, rows_grain, [&](std::size_t first, std::size_t last) {
                       for (std::size_t i = first; i < last; ++i) {
                         float* drow = out + i * c;
                         const std::int64_t t = target.data()[i];
                         if (t == ignore) {
                           std::fill_n(drow, c, 0.0f);
                           continue;
                         }
                         const float g = reduction == Reduction::none ? dy.data()[i] : scale;
                         const float* row = xs + i * c;
                         const float m = stats[i].max, log_s = stats[i].log_sum;
                         for (std::size_t j = 0; j < c; ++j)
                           drow[j] = detail::exp_f32((row[j] - m) - log_s) * g;  // softmax * g
                         drow[t] -= g;                                           // - onehot * g
                       }
                     });
                     logits.accumulate_grad(std::move(dx), "cross_entropy");
                   });
  return y;
}

}  // namespace tapegrad::ops
