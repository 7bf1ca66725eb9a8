// include/tapegrad/transformer/make_model.hpp
//
// make_model: The Annotated Transformer's factory. It builds one attention, one feed-forward and
// one positional encoding, clones them into every place they are used (the tutorial's
// copy.deepcopy), assembles the EncoderDecoder and then initialises every parameter with more
// than one dimension by xavier_uniform_ ("Glorot / fan_avg. This was important from their code.").
//
//     auto model = nn::make_model(11, 11, nn::TransformerOptions().N(2));   // the copy task's model
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/transformer/encoder_decoder.hpp"
#include "tapegrad/core/options.hpp"

namespace tapegrad::nn::transformer {

/// The hyper-parameters of make_model, with the tutorial's defaults (the base model of the paper).
class TransformerOptions {
 public:
  /// Number of encoder layers and of decoder layers, >= 1; default 6.
  TAPEGRAD_ARG(std::int64_t, N) = 6;
  /// Width of every activation, embedding and attention output, >= 1; default 512.
  TAPEGRAD_ARG(std::int64_t, d_model) = 512;
  /// Inner width of the feed-forward networks, >= 1; default 2048.
  TAPEGRAD_ARG(std::int64_t, d_ff) = 2048;
  /// Number of attention heads, >= 1 and dividing d_model; default 8.
  TAPEGRAD_ARG(std::int64_t, h) = 8;
  /// Dropout probability everywhere (embeddings, attention, sub-layers, FFN), in [0, 1]; 0.1.
  TAPEGRAD_ARG(double, dropout) = 0.1;
  /// Which LayerNorm the sub-layers and the stacks use; default the tutorial's (annotated).
  TAPEGRAD_ARG(LayerNormVariant, layer_norm) = LayerNormVariant::annotated;
};

/// The tutorial's make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout). Every random
/// draw (initialisation and dropout) comes from `generator` (the default one when null), so a
/// seeded generator gives the same model on every run. ValueError for sizes that do not fit.
std::shared_ptr<EncoderDecoder> make_model(std::int64_t src_vocab, std::int64_t tgt_vocab,
                                           const TransformerOptions& options = {},
                                           std::shared_ptr<Generator> generator = nullptr);

}  // namespace tapegrad::nn::transformer
