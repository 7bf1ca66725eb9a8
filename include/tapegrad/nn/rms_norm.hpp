// include/tapegrad/nn/rms_norm.hpp
//
// RMSNorm as a module, a thin shell around ops::rms_norm, with PyTorch 2.4's nn.RMSNorm options:
//   RMSNorm(RMSNormOptions({C}))            y = x / sqrt(mean(x^2) + eps) * weight, eps unset
//                                            meaning float32's machine epsilon (torch.finfo)
//   RMSNorm(RMSNormOptions({C}).eps(1e-5))   LLaMA's, with its norm_eps
// One parameter, "weight" (ones, shape normalized_shape), unless elementwise_affine is false; no
// bias. x (*, normalized_shape) -> the same shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/nn/unary_module.hpp"
#include "tapegrad/core/options.hpp"

namespace tapegrad::nn {

struct RMSNormOptions {
  RMSNormOptions(std::vector<std::int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  /// The trailing dimensions to normalise over (PyTorch's normalized_shape; non-empty, >= 0).
  TAPEGRAD_ARG(std::vector<std::int64_t>, normalized_shape);
  /// Added to mean(x^2) under the square root (>= 0); unset: torch.finfo(float32).eps, 2^-23.
  TAPEGRAD_ARG(std::optional<double>, eps) = std::nullopt;
  /// Learn a per-element scale "weight" (default true); without it nothing is registered.
  TAPEGRAD_ARG(bool, elementwise_affine) = true;
};

class RMSNorm : public UnaryModule {
 public:
  /// ValueError for an empty or negative normalized_shape or a negative or NaN eps.
  explicit RMSNorm(RMSNormOptions options);
  /// RMSNorm over the last dimension of size `features`, eps unset.
  explicit RMSNorm(std::int64_t features);

  /// x (*, normalized_shape) -> the same shape. ShapeError naming the module for another shape.
  Tensor forward(const Tensor& x) override;
  /// weight = 1.
  void reset_parameters();
  const RMSNormOptions& options() const { return options_; }

  Parameter weight;  ///< "weight", shape normalized_shape; undefined without elementwise_affine

  std::string type_name() const override { return "RMSNorm"; }
  /// "(512,), eps=None, elementwise_affine=True", as PyTorch prints it.
  void extra_repr(std::ostream& os) const override;

 private:
  RMSNormOptions options_;
};

}  // namespace tapegrad::nn
