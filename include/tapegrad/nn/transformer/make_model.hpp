// include/tapegrad/nn/transformer/make_model.hpp
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

#include "tapegrad/nn/transformer/encoder_decoder.hpp"

namespace tapegrad::nn::transformer {

/// The hyper-parameters of make_model, with the tutorial's defaults (the base model of the paper).
class TransformerOptions {
 public:
  /// Number of encoder layers and of decoder layers.
  TransformerOptions& N(std::int64_t v) {
    N_ = v;
    return *this;
  }
  std::int64_t N() const { return N_; }
  /// Width of every activation, embedding and attention output.
  TransformerOptions& d_model(std::int64_t v) {
    d_model_ = v;
    return *this;
  }
  std::int64_t d_model() const { return d_model_; }
  /// Inner width of the feed-forward networks.
  TransformerOptions& d_ff(std::int64_t v) {
    d_ff_ = v;
    return *this;
  }
  std::int64_t d_ff() const { return d_ff_; }
  /// Number of attention heads; must divide d_model.
  TransformerOptions& h(std::int64_t v) {
    h_ = v;
    return *this;
  }
  std::int64_t h() const { return h_; }
  /// Dropout probability everywhere (embeddings, attention weights, sub-layer outputs, FFN).
  TransformerOptions& dropout(double v) {
    dropout_ = v;
    return *this;
  }
  double dropout() const { return dropout_; }
  /// Which LayerNorm the sub-layers and the stacks use (default: the tutorial's).
  TransformerOptions& layer_norm(LayerNormVariant v) {
    layer_norm_ = v;
    return *this;
  }
  LayerNormVariant layer_norm() const { return layer_norm_; }

 private:
  std::int64_t N_ = 6, d_model_ = 512, d_ff_ = 2048, h_ = 8;
  double dropout_ = 0.1;
  LayerNormVariant layer_norm_ = LayerNormVariant::annotated;
};

/// The tutorial's make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout). Every random
/// draw (initialisation and dropout) comes from `generator` (the default one when null), so a
/// seeded generator gives the same model on every run. ValueError for sizes that do not fit.
std::shared_ptr<EncoderDecoder> make_model(std::int64_t src_vocab, std::int64_t tgt_vocab,
                                           const TransformerOptions& options = {},
                                           std::shared_ptr<Generator> generator = nullptr);

}  // namespace tapegrad::nn::transformer
