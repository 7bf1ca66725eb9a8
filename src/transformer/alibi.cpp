// src/transformer/alibi.cpp: ALiBi's attention (transformer/alibi.hpp), on the public API only.
#include "tapegrad/transformer/alibi.hpp"

#include <cmath>

#include "tapegrad/autograd/module_scope.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/ops/causal_attention.hpp"

namespace tapegrad::nn::transformer {

namespace {
std::shared_ptr<Linear> linear(std::int64_t in, std::int64_t out,
                               std::shared_ptr<Generator> generator) {
  return std::make_shared<Linear>(LinearOptions(in, out), std::move(generator));
}
}  // namespace

AlibiAttention::AlibiAttention(const GPTConfig& config, std::shared_ptr<Generator> generator)
    : c_attn(register_module("c_attn", linear(config.n_embd(), 3 * config.n_embd(), generator))),
      c_proj(register_module("c_proj", linear(config.n_embd(), config.n_embd(), generator))),
      attn_dropout(
          register_module("attn_dropout", std::make_shared<Dropout>(config.dropout(), generator))),
      resid_dropout(
          register_module("resid_dropout", std::make_shared<Dropout>(config.dropout(), generator))),
      n_head(config.n_head()) {
  check<ValueError>(config.position() == "none",
                    "AlibiAttention: expected position \"none\" (ALiBi's bias is the model's "
                    "position scheme), got position \"",
                    config.position(), "\"");
}

Tensor AlibiAttention::forward(const Tensor& x, Array* attention) {
  autograd::ModuleScope scope(type_name(), path());  // errors and profiles name it
  const Tensor qkv = c_attn->forward(x);             // (B, T, 3C): q | k | v
  auto options = CausalAttentionOptions()
                     .bias(bias(x.shape()[1]))
                     .dropout(attn_dropout->options().p())
                     .training(attn_dropout->is_training());
  if (attn_dropout->is_training() && attn_dropout->options().p() > 0.0 && qkv.numel() > 0)
    options.dropout_stream(attn_dropout->next_stream());
  const Tensor y = ops::causal_self_attention(qkv, n_head, options, attention);
  return resid_dropout->forward(c_proj->forward(y));
}

Array AlibiAttention::bias(std::size_t T) const {
  const std::size_t H = std::size_t(n_head);
  Array b = Array::from_shape({H, T, T});
  for (std::size_t h = 0; h < H; ++h) {
    const double slope = std::exp2(-8.0 * double(h + 1) / double(H));
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j) b(h, i, j) = float(-slope * (double(i) - double(j)));
  }
  return b;
}

}  // namespace tapegrad::nn::transformer
