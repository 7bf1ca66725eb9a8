// src/transformer/encoder_decoder.cpp: EncoderDecoder, encode then decode.
#include "tapegrad/transformer/encoder_decoder.hpp"

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn::transformer {

EncoderDecoder::EncoderDecoder(std::shared_ptr<Encoder> encoder_module,
                               std::shared_ptr<Decoder> decoder_module,
                               std::shared_ptr<InputEmbedding> src_embed_module,
                               std::shared_ptr<InputEmbedding> tgt_embed_module,
                               std::shared_ptr<GeneratorHead> generator_module) {
  check<ValueError>(
      encoder_module && decoder_module && src_embed_module && tgt_embed_module && generator_module,
      "EncoderDecoder: expected an encoder, a decoder, two embeddings and a generator, got a null "
      "pointer");
  encoder = register_module("encoder", std::move(encoder_module));
  decoder = register_module("decoder", std::move(decoder_module));
  src_embed = register_module("src_embed", std::move(src_embed_module));
  tgt_embed = register_module("tgt_embed", std::move(tgt_embed_module));
  generator = register_module("generator", std::move(generator_module));
}

Tensor EncoderDecoder::forward(const IndexArray& src, const IndexArray& tgt,
                               const std::optional<Mask>& src_mask,
                               const std::optional<Mask>& tgt_mask) {
  return decode(encode(src, src_mask), src_mask, tgt, tgt_mask);
}

Tensor EncoderDecoder::encode(const IndexArray& src, const std::optional<Mask>& src_mask) {
  autograd::ModuleScope scope(type_name(), path());
  return encoder->forward(src_embed->forward(src), src_mask);
}

Tensor EncoderDecoder::decode(const Tensor& memory, const std::optional<Mask>& src_mask,
                              const IndexArray& tgt, const std::optional<Mask>& tgt_mask) {
  autograd::ModuleScope scope(type_name(), path());
  return decoder->forward(tgt_embed->forward(tgt), memory, src_mask, tgt_mask);
}

}  // namespace tapegrad::nn::transformer
