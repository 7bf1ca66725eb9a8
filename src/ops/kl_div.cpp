// src/ops/kl_div.cpp
//
// kl_div: the checks and a recorded backward; the maths is in the reference kernels below (read
// them first), and src/kernels/kl_div.cpp has their fast versions, which kernels::pick chooses for
// the CPU (docs/kernels.md). Backward needs only each element's slope dloss/dx (-t, or -exp(t) with
// log_target), which the forward kernel writes: the input is not read, so nothing is saved for
// the version check.
#include "tapegrad/ops/kl_div.hpp"

#include <cmath>
#include <memory>

#include "kl_div_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// Plain loops, no threads. The fast versions compute the same formula with a vectorised
// exponential (exp_f32) where these call std::exp, which can move a log_target result by a float
// rounding or two (docs/semantics.md#kernel-sets).

// The pointwise KL divergence of the target t from the input x (x holds log-probabilities):
//   loss_i = t_i * log(t_i) - t_i * x_i        (t_i log t_i = 0 at t_i = 0, PyTorch's xlogy)
//   loss_i = exp(t_i) * (t_i - x_i)            (log_target: t holds log-probabilities too)
//   slope_i = dloss_i/dx_i = -t_i, or -exp(t_i)
// Reduced: sum_i loss_i (in double, in order) / divisor (1, n or the batch size).
void kl_div_forward(const float* x, const float* t, float* loss, float* slope, std::size_t n,
                    bool log_target, bool per_element, float divisor) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    float loss_i;
    if (log_target) {
      loss_i = std::exp(t[i]) * (t[i] - x[i]);
      slope[i] = -std::exp(t[i]);
    } else {
      const float xlogy = t[i] == 0.0f ? 0.0f : t[i] * std::log(t[i]);
      loss_i = xlogy - t[i] * x[i];
      slope[i] = -t[i];
    }
    if (per_element) loss[i] = loss_i;
    total += loss_i;
  }
  if (!per_element) loss[0] = float(total) / divisor;
}

// dx_i = slope_i * dy_i (per element), or slope_i * dy / divisor (reduced)
void kl_div_backward(const float* dy, const float* slope, float* dx, std::size_t n,
                     bool per_element, float divisor) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = slope[i] * (per_element ? dy[i] : dy[0] / divisor);
}

// ---- the op -------------------------------------------------------------------------------------

Tensor kl_div(const Tensor& input, const Array& target, const KLDivOptions& options) {
  const std::string where = autograd::where("kl_div");
  const std::string& red = options.reduction();
  check<ValueError>(red == "none" || red == "sum" || red == "mean" || red == "batchmean", red,
                    " is not a valid value for reduction | ", where,
                    ": expected reduction \"none\", \"mean\", \"batchmean\" or \"sum\", got \"",
                    red, "\"");
  check<ShapeError>(
      input.shape() == target.shape(), "The size of tensor a must match the size of tensor b | ",
      where, ": expected target of the input's shape ", input.shape(), ", got ", target.shape());
  check<ShapeError>(
      red != "batchmean" || input.dim() > 0, where,
      ": expected an input with a batch dimension for reduction \"batchmean\", got shape ()");
  const std::size_t n = input.numel();
  const bool per_element = red == "none";
  const float divisor = red == "mean"        ? static_cast<float>(n)
                        : red == "batchmean" ? static_cast<float>(input.shape()[0])
                                             : 1.0f;
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<kl_div_forward>();
  const auto backward_kernel = kernels::pick<kl_div_backward>();
  auto slope = std::make_shared<Array>(Array::from_shape(target.shape()));
  Array loss = Array::from_shape(per_element ? input.shape() : Shape{});
  forward(input.data().data(), target.data(), loss.data(), slope->data(), n, options.log_target(),
          per_element, divisor);
  Tensor y(std::move(loss));
  autograd::record(
      "kl_div", y, {input}, {},
      [input = input.edge(), slope, divisor, n, per_element, backward_kernel](Array dy) {
        Array dx = Array::from_shape(input.shape());
        backward_kernel(dy.data(), slope->data(), dx.data(), n, per_element, divisor);
        input.accumulate_grad(std::move(dx), "kl_div");
      });
  return y;
}

}  // namespace tapegrad::ops
