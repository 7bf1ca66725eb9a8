// include/tapegrad/transformer/encoder_decoder.hpp
//
// EncoderDecoder: The Annotated Transformer's top-level model, holding (in this order, the
// tutorial's) "encoder", "decoder", "src_embed", "tgt_embed" and "generator":
//
//     memory = encoder(src_embed(src), src_mask)                         encode
//     out    = decoder(tgt_embed(tgt), memory, src_mask, tgt_mask)       decode -> (B, Tt, d_model)
//
// forward() returns the decoder's output, NOT log-probabilities: as in the tutorial, the caller
// applies `generator` (usually inside the loss). src (B, Ts) and tgt (B, Tt) are token ids;
// src_mask (B, 1, Ts) from ops::padding_mask, tgt_mask (B, Tt, Tt) from ops::target_mask.
#pragma once

#include <memory>
#include <optional>

#include "tapegrad/transformer/decoder.hpp"
#include "tapegrad/transformer/encoder.hpp"
#include "tapegrad/transformer/generator_head.hpp"
#include "tapegrad/transformer/input_embedding.hpp"

namespace tapegrad::nn::transformer {

class EncoderDecoder : public Module {
 public:
  EncoderDecoder(std::shared_ptr<Encoder> encoder, std::shared_ptr<Decoder> decoder,
                 std::shared_ptr<InputEmbedding> src_embed,
                 std::shared_ptr<InputEmbedding> tgt_embed,
                 std::shared_ptr<GeneratorHead> generator);

  /// decode(encode(src, src_mask), src_mask, tgt, tgt_mask): (B, Tt, d_model).
  Tensor forward(const IndexArray& src, const IndexArray& tgt, const std::optional<Mask>& src_mask,
                 const std::optional<Mask>& tgt_mask);
  /// src (B, Ts) -> memory (B, Ts, d_model).
  Tensor encode(const IndexArray& src, const std::optional<Mask>& src_mask);
  /// memory (B, Ts, d_model), tgt (B, Tt) -> (B, Tt, d_model).
  Tensor decode(const Tensor& memory, const std::optional<Mask>& src_mask, const IndexArray& tgt,
                const std::optional<Mask>& tgt_mask);

  std::shared_ptr<Encoder> encoder;           ///< "encoder"
  std::shared_ptr<Decoder> decoder;           ///< "decoder"
  std::shared_ptr<InputEmbedding> src_embed;  ///< "src_embed"
  std::shared_ptr<InputEmbedding> tgt_embed;  ///< "tgt_embed"
  std::shared_ptr<GeneratorHead> generator;   ///< "generator"

  std::string type_name() const override { return "EncoderDecoder"; }
};

}  // namespace tapegrad::nn::transformer
