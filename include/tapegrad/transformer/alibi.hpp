// include/tapegrad/transformer/alibi.hpp
//
// ALiBi (Press et al., "Train Short, Test Long", 2022): the worked case of a GPT part written on
// the public API alone and registered by name (gpt_parts.hpp), here as the attention "alibi".
// src/transformer/alibi.cpp uses nothing a learner's own part could not: a Module with two
// Linears and two Dropouts, the fused causal attention and its additive bias.
//
// ALiBi gives the model no position table (it runs with GPTConfig::position "none"). Each head h
// adds -slope_h * (i - j) to the score of query i against key j: the further back a key, the less
// it is attended to, and each head forgets at its own rate. The slopes are a geometric sequence,
// 2^(-8/H), 2^(-16/H), ..., 2^(-8), for H heads (the paper's rule for H a power of two; for other
// H the same sequence, where the paper interleaves two). The rest is nanoGPT's attention: one
// fused projection to q | k | v, the causal softmax, the output projection, dropout.
//
//     GPT model(GPTConfig(vocab, 256).position("none").attention("alibi"));
//     gpt --attention alibi --pos none          # (or --pos alibi, which says both)
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/transformer/gpt.hpp"

namespace tapegrad::nn::transformer {

class AlibiAttention : public BlockAttention {
 public:
  /// ValueError unless config.position() is "none": ALiBi is the model's position scheme, and a
  /// table or a rotation beside it would count positions twice.
  AlibiAttention(const GPTConfig& config, std::shared_ptr<Generator> generator);
  /// x (B, T, C) -> (B, T, C): nanoGPT's attention with ALiBi's bias on the scores.
  Tensor forward(const Tensor& x, Array* attention = nullptr) override;
  /// (n_head, T, T): -slope_h * (i - j) for keys j <= i (the entries above are never read).
  Array bias(std::size_t T) const;

  std::shared_ptr<Linear> c_attn;          ///< "c_attn": Linear(C, 3C), q | k | v
  std::shared_ptr<Linear> c_proj;          ///< "c_proj": Linear(C, C), a residual projection
  std::shared_ptr<Dropout> attn_dropout;   ///< "attn_dropout"
  std::shared_ptr<Dropout> resid_dropout;  ///< "resid_dropout"
  std::int64_t n_head;
};

}  // namespace tapegrad::nn::transformer
