// examples/gpt/alibi.hpp: ALiBi (Press et al., "Train Short, Test Long", 2022), written as a learner
// writes it out of tree: an attention of one's own that plugs into the library's GPT Block through
// GPTConfig::make_attention, with public headers only and no line of the library copied.
//
// ALiBi gives the model no position table. Each head h adds -slope_h * (i - j) to the score of
// query i against key j: the further back a key, the less it is attended to, and each head forgets
// at its own rate. The slopes are a geometric sequence, 2^(-8/H), 2^(-16/H), ..., 2^(-8), for H
// heads (the paper's rule for H a power of two; for other H the same sequence, where the paper
// interleaves two). The bias goes into the fused attention as it is (CausalAttentionOptions::bias),
// so the rest is nanoGPT's attention: one fused projection to q | k | v, the causal softmax, the
// output projection, dropout.
//
//     gpt --pos alibi                  # trains it (examples/gpt/gpt.cpp)
//     auto config = GPTConfig(V, T).position("none").make_attention(examples::alibi_attention());
#pragma once

#include <cmath>
#include <memory>

#include <tapegrad/tapegrad.hpp>

namespace examples {
namespace tt = tapegrad::nn::transformer;

class AlibiAttention : public tt::BlockAttention {
 public:
  AlibiAttention(const tt::GPTConfig& config, std::shared_ptr<tapegrad::Generator> generator)
      : c_attn(register_module("c_attn", linear(config.n_embd(), 3 * config.n_embd(), generator))),
        c_proj(register_module("c_proj", linear(config.n_embd(), config.n_embd(), generator))),
        attn_dropout(register_module(
            "attn_dropout", std::make_shared<tapegrad::nn::Dropout>(config.dropout(), generator))),
        resid_dropout(register_module(
            "resid_dropout", std::make_shared<tapegrad::nn::Dropout>(config.dropout(), generator))),
        n_head(config.n_head()) {}

  // x (B, T, C) -> (B, T, C): nanoGPT's attention with ALiBi's bias on the scores.
  tapegrad::Tensor forward(const tapegrad::Tensor& x, tapegrad::Array* attention) override {
    tapegrad::autograd::ModuleScope scope(type_name(), path());  // errors and profiles name it
    const tapegrad::Tensor qkv = c_attn->forward(x);              // (B, T, 3C): q | k | v
    auto options = tapegrad::CausalAttentionOptions()
                       .bias(bias(x.shape()[1]))
                       .dropout(attn_dropout->options().p())
                       .training(attn_dropout->is_training());
    if (attn_dropout->is_training() && attn_dropout->options().p() > 0.0 && qkv.numel() > 0)
      options.dropout_stream(attn_dropout->next_stream());
    const tapegrad::Tensor y = tapegrad::ops::causal_self_attention(qkv, n_head, options, attention);
    return resid_dropout->forward(c_proj->forward(y));
  }

  // (n_head, T, T): -slope_h * (i - j) for keys j <= i (the entries above are never read).
  tapegrad::Array bias(std::size_t T) const {
    const std::size_t H = std::size_t(n_head);
    tapegrad::Array b = tapegrad::Array::from_shape({H, T, T});
    for (std::size_t h = 0; h < H; ++h) {
      const double slope = std::exp2(-8.0 * double(h + 1) / double(H));
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) b(h, i, j) = float(-slope * (double(i) - double(j)));
    }
    return b;
  }

  std::shared_ptr<tapegrad::nn::Linear> c_attn, c_proj;  // c_proj: a residual projection, by name
  std::shared_ptr<tapegrad::nn::Dropout> attn_dropout, resid_dropout;
  std::int64_t n_head;

 private:
  static std::shared_ptr<tapegrad::nn::Linear> linear(std::int64_t in, std::int64_t out,
                                                      std::shared_ptr<tapegrad::Generator> g) {
    return std::make_shared<tapegrad::nn::Linear>(tapegrad::nn::LinearOptions(in, out), g);
  }
};

// The factory GPTConfig::make_attention takes: one AlibiAttention per Block.
inline tt::AttentionFactory alibi_attention() {
  return [](const tt::GPTConfig& config, std::shared_ptr<tapegrad::Generator> generator) {
    return std::make_shared<AlibiAttention>(config, std::move(generator));
  };
}

}  // namespace examples
