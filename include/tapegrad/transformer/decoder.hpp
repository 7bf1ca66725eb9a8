// include/tapegrad/transformer/decoder.hpp
//
// The decoder of The Annotated Transformer:
//   DecoderLayer(size, self_attn, src_attn, feed_forward, dropout): three SublayerConnections
//     ("sublayer.0" .. "sublayer.2") around masked self-attention, attention over the encoder's
//     output `memory`, and the feed-forward network:
//         x = x + dropout(self_attn(n, n, n, tgt_mask))     n = norm(x)
//         x = x + dropout(src_attn(n, m, m, src_mask))      m = memory
//         x = x + dropout(feed_forward(norm(x)))
//   Decoder(layer, N): N clones of `layer` ("layers.0" ...) and a final LayerNorm ("norm").
// x (B, Tt, size), memory (B, Ts, size), src_mask broadcastable to (B, Tt, Ts), tgt_mask to
// (B, Tt, Tt) (subsequent_mask keeps position i from seeing positions after i).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tapegrad/transformer/attention.hpp"
#include "tapegrad/transformer/feed_forward.hpp"
#include "tapegrad/nn/module_list.hpp"
#include "tapegrad/transformer/sublayer.hpp"

namespace tapegrad::nn::transformer {

class DecoderLayer : public Module {
 public:
  /// Registers the given modules as "self_attn", "src_attn" and "feed_forward".
  DecoderLayer(std::int64_t size, std::shared_ptr<MultiHeadedAttention> self_attn,
               std::shared_ptr<MultiHeadedAttention> src_attn,
               std::shared_ptr<PositionwiseFeedForward> feed_forward, double dropout,
               LayerNormVariant norm = LayerNormVariant::annotated,
               std::shared_ptr<Generator> generator = nullptr);

  Tensor forward(const Tensor& x, const Tensor& memory, const std::optional<Mask>& src_mask,
                 const std::optional<Mask>& tgt_mask);
  /// A deep copy: cloned children, the same values, training mode and generator.
  std::shared_ptr<DecoderLayer> clone() const;

  std::int64_t size() const { return size_; }
  LayerNormVariant norm_variant() const { return norm_; }

  std::shared_ptr<MultiHeadedAttention> self_attn;        ///< "self_attn"
  std::shared_ptr<MultiHeadedAttention> src_attn;         ///< "src_attn"
  std::shared_ptr<PositionwiseFeedForward> feed_forward;  ///< "feed_forward"
  std::shared_ptr<ModuleList> sublayer;                   ///< "sublayer": 3 x SublayerConnection

  std::string type_name() const override { return "DecoderLayer"; }

 private:
  std::int64_t size_;
  double dropout_;
  LayerNormVariant norm_;
  std::shared_ptr<Generator> generator_;
};

class Decoder : public Module {
 public:
  /// `layer` becomes "layers.0"; layers 1 .. N-1 are its clones. N >= 1 (ValueError).
  Decoder(std::shared_ptr<DecoderLayer> layer, std::int64_t N);

  /// x (B, Tt, size) -> (B, Tt, size): every layer in turn, then the final norm.
  Tensor forward(const Tensor& x, const Tensor& memory, const std::optional<Mask>& src_mask,
                 const std::optional<Mask>& tgt_mask);

  std::shared_ptr<ModuleList> layers;  ///< "layers"
  std::shared_ptr<LayerNorm> norm;     ///< "norm"

  std::string type_name() const override { return "Decoder"; }
};

}  // namespace tapegrad::nn::transformer
