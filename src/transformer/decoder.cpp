// src/transformer/decoder.cpp: DecoderLayer and Decoder, the tutorial's Figure 1 (right).
#include "tapegrad/transformer/decoder.hpp"

#include "tapegrad/autograd/tape.hpp"
#include "clones.hpp"

namespace tapegrad::nn::transformer {

DecoderLayer::DecoderLayer(std::int64_t size,
                           std::shared_ptr<MultiHeadedAttention> self_attn_module,
                           std::shared_ptr<MultiHeadedAttention> src_attn_module,
                           std::shared_ptr<PositionwiseFeedForward> feed_forward_module,
                           double dropout, LayerNormVariant norm,
                           std::shared_ptr<Generator> generator)
    : size_(size),
      dropout_(dropout),
      norm_(norm),
      generator_(generator ? std::move(generator) : default_generator()) {
  check<ValueError>(
      self_attn_module && src_attn_module && feed_forward_module,
      "DecoderLayer: expected two attention modules and a feed-forward module, got a null pointer");
  self_attn = register_module("self_attn", std::move(self_attn_module));
  src_attn = register_module("src_attn", std::move(src_attn_module));
  feed_forward = register_module("feed_forward", std::move(feed_forward_module));
  sublayer = register_module("sublayer", std::make_shared<ModuleList>());
  for (int i = 0; i < 3; ++i)
    sublayer->push_back(std::make_shared<SublayerConnection>(size, dropout, norm, generator_));
}

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory,
                             const std::optional<Mask>& src_mask,
                             const std::optional<Mask>& tgt_mask) {
  autograd::ModuleScope scope(type_name(), path());
  const Tensor& m = memory;
  Tensor h = sublayer->ptr<SublayerConnection>(0)->forward(
      x, [&](const Tensor& n) { return self_attn->forward(n, n, n, tgt_mask); });
  h = sublayer->ptr<SublayerConnection>(1)->forward(
      h, [&](const Tensor& n) { return src_attn->forward(n, m, m, src_mask); });
  return sublayer->ptr<SublayerConnection>(2)->forward(
      h, [&](const Tensor& n) { return feed_forward->forward(n); });
}

std::shared_ptr<DecoderLayer> DecoderLayer::clone() const {
  auto copy = std::make_shared<DecoderLayer>(size_, self_attn->clone(), src_attn->clone(),
                                             feed_forward->clone(), dropout_, norm_, generator_);
  copy->load_state_dict(state_dict());
  copy->train(is_training());
  return copy;
}

Decoder::Decoder(std::shared_ptr<DecoderLayer> layer, std::int64_t N) {
  layers = register_module("layers", std::make_shared<ModuleList>());
  detail::append_clones(*layers, layer, N, "Decoder");
  norm = register_module("norm", std::make_shared<LayerNorm>(
                                     layer_norm_options(layer->size(), layer->norm_variant())));
}

Tensor Decoder::forward(const Tensor& x, const Tensor& memory, const std::optional<Mask>& src_mask,
                        const std::optional<Mask>& tgt_mask) {
  autograd::ModuleScope scope(type_name(), path());
  Tensor h = x;
  for (const auto& layer : *layers)
    h = std::static_pointer_cast<DecoderLayer>(layer)->forward(h, memory, src_mask, tgt_mask);
  return norm->forward(h);
}

}  // namespace tapegrad::nn::transformer
