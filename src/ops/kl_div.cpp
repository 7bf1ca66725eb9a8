// src/ops/kl_div.cpp
//
// kl_div: the checks and a recorded backward; the maths is in the kernels: kl_div_reference.cpp
// (read it first) and kl_div_fast.cpp, picked for the CPU by kernels::kl_div_kernels()
// (docs/kernels.md). Backward needs only each element's slope dloss/dx (-t, or -exp(t) with
// log_target), which the forward kernel writes: the input is not read, so nothing is saved for
// the version check.
#include "tapegrad/ops/kl_div.hpp"

#include <memory>

#include "kl_div_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

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
  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::KLDivKernels* kernel = &kernels::kl_div_kernels();
  auto slope = std::make_shared<Array>(Array::from_shape(target.shape()));
  Array loss = Array::from_shape(per_element ? input.shape() : Shape{});
  kernel->forward(input.data().data(), target.data(), loss.data(), slope->data(), n,
                  options.log_target(), per_element, divisor);
  Tensor y(std::move(loss));
  autograd::record("kl_div", y, {input}, {},
                   [input, slope, divisor, n, per_element, kernel](Array dy) {
                     Array dx = Array::from_shape(input.shape());
                     kernel->backward(dy.data(), slope->data(), dx.data(), n, per_element, divisor);
                     input.accumulate_grad(std::move(dx), "kl_div");
                   });
  return y;
}

}  // namespace tapegrad::ops
