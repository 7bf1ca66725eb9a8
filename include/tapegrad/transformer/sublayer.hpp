// include/tapegrad/transformer/sublayer.hpp
//
// SublayerConnection(size, dropout): the residual connection around every sub-layer of The
// Annotated Transformer, with the norm FIRST (pre-norm, "for code simplicity" as the tutorial says):
//
//     y = x + dropout(sublayer(norm(x)))          x (B, T, size) -> (B, T, size)
//
// `sublayer` is any function of one tensor: an attention with its other arguments bound, or a
// feed-forward. The norm is the tutorial's LayerNorm unless another variant is asked for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/layer_norm.hpp"

namespace tapegrad::nn::transformer {

class SublayerConnection : public Module {
 public:
  SublayerConnection(std::int64_t size, double dropout,
                     LayerNormVariant norm = LayerNormVariant::annotated,
                     std::shared_ptr<Generator> generator = nullptr);

  Tensor forward(const Tensor& x, const std::function<Tensor(const Tensor&)>& sublayer);

  std::shared_ptr<LayerNorm> norm;   ///< "norm"
  std::shared_ptr<Dropout> dropout;  ///< "dropout", on the sub-layer's output

  std::string type_name() const override { return "SublayerConnection"; }
};

/// The LayerNorm options for a model-wide variant: annotated(size), or PyTorch's LayerNorm(size).
LayerNormOptions layer_norm_options(std::int64_t size, LayerNormVariant variant);

}  // namespace tapegrad::nn::transformer
