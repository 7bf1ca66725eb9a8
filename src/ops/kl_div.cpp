// src/ops/kl_div.cpp
//
// kl_div in one pass: the elementwise loss, then the reduction summed in double, in order.
// Backward needs only the target (kept by the closure as data; the input is not read), so
// nothing is saved for the version check.
#include "tapegrad/ops/kl_div.hpp"

#include <cmath>
#include <memory>

#include "../exp_f32.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

Tensor kl_div(const Tensor& input, const Array& target, const KLDivOptions& options) {
  // loss_i = xlogy(t_i, t_i) - t_i * x_i            dx_i = -t_i * g_i
  // loss_i = exp(t_i) * (t_i - x_i)  (log_target)    dx_i = -exp(t_i) * g_i
  // reduction: none (g_i = dy_i), sum (g_i = dy), mean (g_i = dy / n), batchmean (g_i = dy / input.size(0))
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
  const bool log_target = options.log_target();
  const std::size_t n = input.numel();
  const float* x = input.data().data();
  const float* t = target.data();

  // The derivative of each element's loss with respect to x: -t (or -exp(t)).
  auto slope = std::make_shared<Array>(Array::from_shape(target.shape()));
  Array loss = Array::from_shape(input.shape());
  for (std::size_t i = 0; i < n; ++i) {
    if (log_target) {
      const float et = detail::exp_f32(t[i]);
      loss.data()[i] = et * (t[i] - x[i]);
      slope->data()[i] = -et;
    } else {
      const float xlogy = t[i] == 0.0f && !std::isnan(t[i]) ? 0.0f : t[i] * std::log(t[i]);
      loss.data()[i] = xlogy - t[i] * x[i];
      slope->data()[i] = -t[i];
    }
  }
  float divisor = 1.0f;
  Tensor y;
  if (red == "none") {
    y = Tensor(std::move(loss));
  } else {
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) total += loss.data()[i];
    if (red == "mean") divisor = static_cast<float>(n);
    if (red == "batchmean") divisor = static_cast<float>(input.shape()[0]);
    y = Tensor(Array(static_cast<float>(total) / divisor));
  }
  autograd::record("kl_div", y, {input}, {},
                   [input, slope, divisor, n, per_element = red == "none"](Array dy) {
                     Array dx = Array::from_shape(input.shape());
                     const float* s = slope->data();
                     if (per_element) {
                       for (std::size_t i = 0; i < n; ++i) dx.data()[i] = s[i] * dy.data()[i];
                     } else {
                       const float g = dy.data()[0] / divisor;
                       for (std::size_t i = 0; i < n; ++i) dx.data()[i] = s[i] * g;
                     }
                     input.accumulate_grad(std::move(dx), "kl_div");
                   });
  return y;
}

}  // namespace tapegrad::ops
