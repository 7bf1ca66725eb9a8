// src/transformer/encoder.cpp: EncoderLayer and Encoder, the tutorial's Figure 1 (left).
#include "tapegrad/transformer/encoder.hpp"

#include "tapegrad/autograd/tape.hpp"
#include "clones.hpp"

namespace tapegrad::nn::transformer {

EncoderLayer::EncoderLayer(std::int64_t size,
                           std::shared_ptr<MultiHeadedAttention> self_attn_module,
                           std::shared_ptr<PositionwiseFeedForward> feed_forward_module,
                           double dropout, LayerNormVariant norm,
                           std::shared_ptr<Generator> generator)
    : size_(size),
      dropout_(dropout),
      norm_(norm),
      generator_(generator ? std::move(generator) : default_generator()) {
  check<ValueError>(
      self_attn_module && feed_forward_module,
      "EncoderLayer: expected a self-attention and a feed-forward module, got a null pointer");
  self_attn = register_module("self_attn", std::move(self_attn_module));
  feed_forward = register_module("feed_forward", std::move(feed_forward_module));
  sublayer = register_module("sublayer", std::make_shared<ModuleList>());
  for (int i = 0; i < 2; ++i)
    sublayer->push_back(std::make_shared<SublayerConnection>(size, dropout, norm, generator_));
}

Tensor EncoderLayer::forward(const Tensor& x, const std::optional<Mask>& mask) {
  autograd::ModuleScope scope(type_name(), path());
  Tensor h = sublayer->ptr<SublayerConnection>(0)->forward(
      x, [&](const Tensor& n) { return self_attn->forward(n, n, n, mask); });
  return sublayer->ptr<SublayerConnection>(1)->forward(
      h, [&](const Tensor& n) { return feed_forward->forward(n); });
}

std::shared_ptr<EncoderLayer> EncoderLayer::clone() const {
  auto copy = std::make_shared<EncoderLayer>(size_, self_attn->clone(), feed_forward->clone(),
                                             dropout_, norm_, generator_);
  copy->load_state_dict(state_dict());  // the sublayer norms too
  copy->train(is_training());
  return copy;
}

Encoder::Encoder(std::shared_ptr<EncoderLayer> layer, std::int64_t N) {
  layers = register_module("layers", std::make_shared<ModuleList>());
  detail::append_clones(*layers, layer, N, "Encoder");
  norm = register_module("norm", std::make_shared<LayerNorm>(
                                     layer_norm_options(layer->size(), layer->norm_variant())));
}

Tensor Encoder::forward(const Tensor& x, const std::optional<Mask>& mask) {
  autograd::ModuleScope scope(type_name(), path());
  Tensor h = x;
  for (const auto& layer : *layers)
    h = std::static_pointer_cast<EncoderLayer>(layer)->forward(h, mask);
  return norm->forward(h);
}

}  // namespace tapegrad::nn::transformer
