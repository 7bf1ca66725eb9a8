// src/ops/loss.cpp
//
// cross_entropy = log_softmax + negative log-likelihood, fused into one op (PyTorch's
// CrossEntropyLoss, docs/semantics.md#linear-and-the-loss), because it is the hot path of every
// training step (W1: N = 16384 rows of C = 64 logits). This file checks the logits and the
// targets and records the backward; the maths is in the reference kernels below (read them
// first), and src/kernels/loss.cpp has their fast versions, picked for the CPU by kernels::pick
// (docs/kernels.md). Saved for backward: the logits, and per row their max and log-sum-exp.
#include "tapegrad/ops/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "loss_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// One row at a time, no threads. The fast versions compute the same formula with a vectorised
// exponential (exp_f32) where these call std::exp, which can move a result by a few float
// roundings (docs/semantics.md#kernel-sets).

// Per kept row i (t = target[i] != ignore_index):
//   m = max_j x[i, j]                          (so that no exp overflows)
//   log_sum = log(sum_j exp(x[i, j] - m))      (summed in double)
//   log_softmax(x)[i, j] = (x[i, j] - m) - log_sum
//   loss_i = -log_softmax(x)[i, t]
// mean = sum_i loss_i / count (count = kept rows; none kept: 0 / 0 = NaN, as in PyTorch)
void cross_entropy_forward(const float* x, const std::int64_t* target, std::int64_t ignore,
                           CrossEntropyReduction reduction, float* loss, float* row_max,
                           float* log_sum, std::size_t N, std::size_t C) {
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
// dy[i] (none); ignored rows get softmax(x)[i, j] * 0: 0, or NaN where the softmax is NaN
// (kernels::ignored_row_gradient), as in PyTorch.
void cross_entropy_backward(const float* dy, const float* x, const std::int64_t* target,
                            std::int64_t ignore, CrossEntropyReduction reduction, std::size_t count,
                            const float* row_max, const float* log_sum, float* dx, std::size_t N,
                            std::size_t C) {
  for (std::size_t i = 0; i < N; ++i) {
    const float g = reduction == CrossEntropyReduction::none ? dy[i]
                    : reduction == CrossEntropyReduction::sum
                        ? dy[0]
                        : float(double(dy[0]) / double(count));
    if (target[i] == ignore) {
      std::fill_n(dx + i * C, C, kernels::ignored_row_gradient(x + i * C, C));
      continue;
    }
    for (std::size_t j = 0; j < C; ++j) {
      const float softmax = std::exp((x[i * C + j] - row_max[i]) - log_sum[i]);
      const float one_hot = j == std::size_t(target[i]) ? 1.0f : 0.0f;
      dx[i * C + j] = (softmax - one_hot) * g;
    }
  }
}

// ---- the op -------------------------------------------------------------------------------------

namespace {
CrossEntropyReduction reduction_of(const CrossEntropyOptions& options) {
  const std::string& r = options.reduction();
  return r == "mean"  ? CrossEntropyReduction::mean
         : r == "sum" ? CrossEntropyReduction::sum
                      : CrossEntropyReduction::none;
}

// Checks the shapes and every target; returns the number of rows kept (target != ignore_index).
std::size_t check_targets(const Shape& s, const IndexArray& target, std::int64_t ignore,
                          const std::string& where) {
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
  const auto num_classes = static_cast<std::int64_t>(s[1]);
  std::size_t count = 0;
  for (std::size_t i = 0; i < s[0]; ++i) {
    const std::int64_t t = target.data()[i];
    check<IndexError>(t == ignore || (0 <= t && t < num_classes), "Target ", t,
                      " is out of bounds. | ", where, ": expected targets in [0, ", num_classes,
                      ") or ignore_index ", ignore, ", got ", t, " at position ", i);
    count += t != ignore;
  }
  return count;
}
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
  const CrossEntropyReduction reduction = reduction_of(options);
  const std::int64_t ignore = options.ignore_index();
  const std::size_t count = check_targets(logits.shape(), target, ignore, where);
  const std::size_t N = logits.shape()[0], C = logits.shape()[1];

  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<cross_entropy_forward>();
  const auto backward_kernel = kernels::pick<cross_entropy_backward>();
  std::vector<float> stats(2 * N, 0.0f);  // per row: max, then log_sum
  Array losses = Array::from_shape(reduction == CrossEntropyReduction::none ? Shape{N} : Shape{});
  forward(logits.data().data(), target.data(), ignore, reduction, losses.data(), stats.data(),
          stats.data() + N, N, C);
  Tensor y(std::move(losses));

  auto backward = [logits, target, ignore, reduction, count, stats = std::move(stats),
                   backward_kernel, N, C](Array dy) {
    Array dx = Array::from_shape(logits.shape());
    backward_kernel(dy.data(), logits.data().data(), target.data(), ignore, reduction, count,
                    stats.data(), stats.data() + N, dx.data(), N, C);
    logits.accumulate_grad(std::move(dx), "cross_entropy");
  };
  autograd::record("cross_entropy", y, {logits}, {logits}, std::move(backward));
  return y;
}

}  // namespace tapegrad::ops
