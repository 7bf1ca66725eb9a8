// include/tapegrad/nn/layer_norm.hpp
//
// LayerNorm as a module, a thin shell around ops::layer_norm. Two flavours (ops/layer_norm.hpp):
//   LayerNorm(512)                                  PyTorch's nn.LayerNorm: eps 1e-5 under the
//                                                   square root of the biased variance; parameters
//                                                   "weight" (ones) and "bias" (zeros)
//   LayerNorm(LayerNormOptions::annotated(512))     The Annotated Transformer's LayerNorm: unbiased
//                                                   std, eps 1e-6 added to it; parameters "a_2"
//                                                   (ones) and "b_2" (zeros), the tutorial's names,
//                                                   so its checkpoints load key for key
// Either way the C++ members are `weight` and `bias`. x (*, normalized_shape) -> the same shape.
#pragma once

#include <cstdint>
#include <vector>

#include "tapegrad/nn/unary_module.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/ops/layer_norm.hpp"

namespace tapegrad::nn {

class LayerNormOptions {
 public:
  LayerNormOptions(std::vector<std::int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  /// The tutorial's LayerNorm(features): variant annotated, eps 1e-6.
  static LayerNormOptions annotated(std::int64_t features) {
    return LayerNormOptions({features}).variant(LayerNormVariant::annotated).eps(1e-6);
  }

  /// The trailing dimensions to normalise over (PyTorch's normalized_shape), >= 1 sizes, each >= 0.
  TAPEGRAD_ARG(std::vector<std::int64_t>, normalized_shape);
  /// Added to the variance (pytorch) or to the std (annotated), >= 0; default 1e-5.
  TAPEGRAD_ARG(double, eps) = 1e-5;
  /// Learn a per-element scale and shift (none registered without); default true.
  TAPEGRAD_ARG(bool, elementwise_affine) = true;
  /// Which formula, which also picks the parameter names; default pytorch.
  TAPEGRAD_ARG(LayerNormVariant, variant) = LayerNormVariant::pytorch;
};

class LayerNorm : public UnaryModule {
 public:
  /// ValueError for an empty or negative normalized_shape or a negative or NaN eps.
  explicit LayerNorm(LayerNormOptions options);
  /// PyTorch's nn.LayerNorm(features).
  explicit LayerNorm(std::int64_t features);

  /// x (*, normalized_shape) -> the same shape. ShapeError naming the module for another shape.
  Tensor forward(const Tensor& x) override;
  /// weight = 1, bias = 0.
  void reset_parameters();
  const LayerNormOptions& options() const { return options_; }

  Parameter weight;  ///< "weight" (or "a_2"), shape normalized_shape; undefined without affine
  Parameter bias;    ///< "bias" (or "b_2"), shape normalized_shape; undefined without affine

  std::string type_name() const override { return "LayerNorm"; }
  /// "(512,), eps=1e-05, elementwise_affine=True", plus ", variant=annotated" for the tutorial's.
  void extra_repr(std::ostream& os) const override;

 private:
  LayerNormOptions options_;
};

}  // namespace tapegrad::nn
