// src/transformer/make_model.cpp: make_model, line for line the tutorial's.
#include "tapegrad/transformer/make_model.hpp"

#include "tapegrad/nn/init.hpp"

namespace tapegrad::nn::transformer {

std::shared_ptr<EncoderDecoder> make_model(std::int64_t src_vocab, std::int64_t tgt_vocab,
                                           const TransformerOptions& o,
                                           std::shared_ptr<Generator> generator) {
  auto gen = generator ? std::move(generator) : default_generator();
  const std::int64_t d = o.d_model();
  const double p = o.dropout();
  auto attn = std::make_shared<MultiHeadedAttention>(o.h(), d, p, gen);
  auto ff = std::make_shared<PositionwiseFeedForward>(d, o.d_ff(), p, gen);
  auto position = [&] {
    return std::make_shared<PositionalEncoding>(d, p, 5000, gen);
  };  // c(position)
  auto model = std::make_shared<EncoderDecoder>(
      std::make_shared<Encoder>(
          std::make_shared<EncoderLayer>(d, attn->clone(), ff->clone(), p, o.layer_norm(), gen),
          o.N()),
      std::make_shared<Decoder>(std::make_shared<DecoderLayer>(d, attn->clone(), attn->clone(),
                                                               ff->clone(), p, o.layer_norm(), gen),
                                o.N()),
      std::make_shared<InputEmbedding>(std::make_shared<Embeddings>(d, src_vocab, gen), position()),
      std::make_shared<InputEmbedding>(std::make_shared<Embeddings>(d, tgt_vocab, gen), position()),
      std::make_shared<GeneratorHead>(d, tgt_vocab, gen));
  init::xavier_uniform_parameters_(*model, gen.get());
  return model;
}

}  // namespace tapegrad::nn::transformer
