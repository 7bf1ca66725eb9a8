// src/ops/loss.cpp
//
// cross_entropy = log_softmax + negative log-likelihood, fused into one op (PyTorch's
// CrossEntropyLoss, docs/semantics.md#linear-and-the-loss), because it is the hot path of every
// training step (W1: N = 16384 rows of C = 64 logits). This file checks the logits and the
// targets and records the backward; the maths is in the kernels: loss_reference.cpp (read it
// first) and loss_fast.cpp, picked for the CPU by kernels::cross_entropy_kernels()
// (docs/kernels.md). Saved for backward: the logits, and per row their max and log-sum-exp.
#include "tapegrad/ops/loss.hpp"

#include <vector>

#include "loss_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

namespace {
using kernels::CrossEntropyReduction;

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

  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::CrossEntropyKernels* kernel = &kernels::cross_entropy_kernels();
  std::vector<float> stats(2 * N, 0.0f);  // per row: max, then log_sum
  Array losses = Array::from_shape(reduction == CrossEntropyReduction::none ? Shape{N} : Shape{});
  kernel->forward(logits.data().data(), target.data(), ignore, reduction, losses.data(),
                  stats.data(), stats.data() + N, N, C);
  Tensor y(std::move(losses));

  auto backward = [logits, target, ignore, reduction, count, stats = std::move(stats), kernel, N,
                   C](Array dy) {
    Array dx = Array::from_shape(logits.shape());
    kernel->backward(dy.data(), logits.data().data(), target.data(), ignore, reduction, count,
                     stats.data(), stats.data() + N, dx.data(), N, C);
    logits.accumulate_grad(std::move(dx), "cross_entropy");
  };
  autograd::record("cross_entropy", y, {logits}, {logits}, std::move(backward));
  return y;
}

}  // namespace tapegrad::ops
