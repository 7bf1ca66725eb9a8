// include/tapegrad/ops/layer_norm.hpp
//
// Layer normalisation over the last dimensions of x, in two flavours:
//   pytorch    PyTorch's F.layer_norm:  y = (x - mean) / sqrt(var + eps) * w + b,  var biased (/ N)
//   annotated  The Annotated Transformer's LayerNorm:  y = w * (x - mean) / (std + eps) + b,
//              std UNBIASED (/ (N - 1)) and eps added to the std, not to the variance.
// The two differ by about eps and by the factor sqrt(N / (N - 1)); a checkpoint trained with one
// should be run with the same one. A "row" is the N = prod(normalized_shape) trailing elements of x;
// forward and backward are fused kernels over contiguous rows (src/ops/layer_norm.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/core/options.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

/// Which formula layer_norm computes (see the top of this file).
enum class LayerNormVariant { pytorch, annotated };

class LayerNormFuncOptions {
 public:
  /// Added to the variance (pytorch) or to the standard deviation (annotated), >= 0; default 1e-5.
  TAPEGRAD_ARG(double, eps) = 1e-5;
  /// Which formula (the top of this file); default pytorch.
  TAPEGRAD_ARG(LayerNormVariant, variant) = LayerNormVariant::pytorch;
};

namespace ops {

/// Throws ValueError naming `where`, PyTorch's text first where it has one, for an empty
/// normalized_shape, a negative size in it, or eps < 0 or NaN: the arguments layer_norm and
/// rms_norm share. The ops call it at every call, nn::LayerNorm and nn::RMSNorm once, at
/// construction.
void check_norm_options(const std::vector<std::int64_t>& normalized_shape, double eps,
                        const std::string& where);

/// x (*, normalized_shape) -> the same shape, each row normalised to mean 0 and (about) unit
/// variance, then scaled by weight and shifted by bias (both of shape normalized_shape; either may
/// be undefined, meaning 1 and 0). Throws ShapeError when x does not end with normalized_shape or
/// weight/bias have another shape, ValueError for a negative or NaN eps. With the annotated
/// variant a row of one element has no unbiased std: the result is NaN, as in PyTorch.
Tensor layer_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  const LayerNormFuncOptions& options = {});

}  // namespace ops
}  // namespace tapegrad
