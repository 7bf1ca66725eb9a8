// include/tapegrad/transformer/encoder.hpp
//
// The encoder of The Annotated Transformer:
//   EncoderLayer(size, self_attn, feed_forward, dropout): two SublayerConnections ("sublayer.0",
//     "sublayer.1") around self-attention and the feed-forward network,
//         x = x + dropout(self_attn(n, n, n, mask)) with n = norm(x);   x = x + dropout(ff(norm(x)))
//   Encoder(layer, N): N clones of `layer` ("layers.0" ... "layers.N-1"; clone i > 0 starts with
//     layer 0's values, as the tutorial's copy.deepcopy) and a final LayerNorm ("norm").
// x (B, T, size), mask broadcastable to (B, T, T) (usually the source padding mask (B, 1, T)).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tapegrad/transformer/attention.hpp"
#include "tapegrad/transformer/feed_forward.hpp"
#include "tapegrad/nn/module_list.hpp"
#include "tapegrad/transformer/sublayer.hpp"

namespace tapegrad::nn::transformer {

class EncoderLayer : public Module {
 public:
  /// Registers the given modules as "self_attn" and "feed_forward". size must equal d_model.
  EncoderLayer(std::int64_t size, std::shared_ptr<MultiHeadedAttention> self_attn,
               std::shared_ptr<PositionwiseFeedForward> feed_forward, double dropout,
               LayerNormVariant norm = LayerNormVariant::annotated,
               std::shared_ptr<Generator> generator = nullptr);

  Tensor forward(const Tensor& x, const std::optional<Mask>& mask);
  /// A deep copy: cloned children, the same values, training mode and generator.
  std::shared_ptr<EncoderLayer> clone() const;

  std::int64_t size() const { return size_; }
  LayerNormVariant norm_variant() const { return norm_; }

  std::shared_ptr<MultiHeadedAttention> self_attn;        ///< "self_attn"
  std::shared_ptr<PositionwiseFeedForward> feed_forward;  ///< "feed_forward"
  std::shared_ptr<ModuleList> sublayer;                   ///< "sublayer": 2 x SublayerConnection

  std::string type_name() const override { return "EncoderLayer"; }

 private:
  std::int64_t size_;
  double dropout_;
  LayerNormVariant norm_;
  std::shared_ptr<Generator> generator_;
};

class Encoder : public Module {
 public:
  /// `layer` becomes "layers.0"; layers 1 .. N-1 are its clones. N >= 1 (ValueError).
  Encoder(std::shared_ptr<EncoderLayer> layer, std::int64_t N);

  /// x (B, T, size) -> (B, T, size): every layer in turn, then the final norm.
  Tensor forward(const Tensor& x, const std::optional<Mask>& mask);

  std::shared_ptr<ModuleList> layers;  ///< "layers"
  std::shared_ptr<LayerNorm> norm;     ///< "norm"

  std::string type_name() const override { return "Encoder"; }
};

}  // namespace tapegrad::nn::transformer
