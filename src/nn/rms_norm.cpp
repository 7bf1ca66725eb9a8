// src/nn/rms_norm.cpp: the RMSNorm module, a thin shell around ops::rms_norm.
#include "tapegrad/nn/rms_norm.hpp"

#include <algorithm>
#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/layer_norm.hpp"
#include "tapegrad/ops/rms_norm.hpp"
#include "tapegrad/core/sizes.hpp"

namespace tapegrad::nn {

RMSNorm::RMSNorm(RMSNormOptions options) : options_(std::move(options)) {
  // The op's checks and texts; an unset eps is the op's default, which passes.
  ops::check_norm_options(options_.normalized_shape(), options_.eps().value_or(0.0), context());
  if (!options_.elementwise_affine()) return;
  Shape shape;
  for (std::int64_t n : options_.normalized_shape()) shape.push_back(static_cast<std::size_t>(n));
  weight = register_parameter("weight", Parameter(new_array(shape, "RMSNorm: weight")));
  reset_parameters();
}

RMSNorm::RMSNorm(std::int64_t features) : RMSNorm(RMSNormOptions({features})) {}

void RMSNorm::reset_parameters() {
  if (!weight.defined()) return;
  autograd::NoGradGuard no_grad;
  std::fill(weight.mutable_data().begin(), weight.mutable_data().end(), 1.0f);
}

Tensor RMSNorm::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::rms_norm(x, options_.normalized_shape(), weight, options_.eps());
}

void RMSNorm::extra_repr(std::ostream& os) const {
  const auto& shape = options_.normalized_shape();  // (checked >= 0 by the constructor)
  os << str(Shape(shape.begin(), shape.end())) << ", eps=";
  if (options_.eps())
    os << py_float(*options_.eps());
  else
    os << "None";
  os << ", elementwise_affine=" << (options_.elementwise_affine() ? "True" : "False");
}

}  // namespace tapegrad::nn
