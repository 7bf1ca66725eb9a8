// src/nn/layer_norm.cpp: the LayerNorm module, a thin shell around ops::layer_norm.
#include "tapegrad/nn/layer_norm.hpp"

#include <cmath>
#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/sizes.hpp"
#include "tapegrad/nn/skip_init.hpp"

namespace tapegrad::nn {

LayerNorm::LayerNorm(LayerNormOptions options) : options_(std::move(options)) {
  ops::check_norm_options(options_.normalized_shape(), options_.eps(), context());
  if (!options_.elementwise_affine()) return;
  Shape shape;
  for (std::int64_t n : options_.normalized_shape()) shape.push_back(static_cast<std::size_t>(n));
  // The tutorial's own LayerNorm calls its parameters a_2 and b_2; keeping its names lets a
  // checkpoint of the tutorial's model load here without renaming keys.
  const bool annotated = options_.variant() == LayerNormVariant::annotated;
  weight = register_parameter(annotated ? "a_2" : "weight",
                              Parameter(new_array(shape, "LayerNorm: weight")));
  bias = register_parameter(annotated ? "b_2" : "bias",
                            Parameter(new_array(shape, "LayerNorm: bias")));
  if (!init_skipped()) reset_parameters();
}

LayerNorm::LayerNorm(std::int64_t features) : LayerNorm(LayerNormOptions({features})) {}

void LayerNorm::reset_parameters() {
  if (!weight.defined()) return;
  autograd::NoGradGuard no_grad;
  std::fill(weight.mutable_data().begin(), weight.mutable_data().end(), 1.0f);
  std::fill(bias.mutable_data().begin(), bias.mutable_data().end(), 0.0f);
}

Tensor LayerNorm::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::layer_norm(x, options_.normalized_shape(), weight, bias,
                         LayerNormFuncOptions().eps(options_.eps()).variant(options_.variant()));
}

void LayerNorm::extra_repr(std::ostream& os) const {
  const auto& shape = options_.normalized_shape();  // (checked >= 0 by the constructor)
  os << str(Shape(shape.begin(), shape.end())) << ", eps=" << py_float(options_.eps())
     << ", elementwise_affine=" << (options_.elementwise_affine() ? "True" : "False");
  if (options_.variant() == LayerNormVariant::annotated) os << ", variant=annotated";
}

}  // namespace tapegrad::nn
