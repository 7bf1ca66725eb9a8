// include/tapegrad/nn/rotary_embedding.hpp
//
// RotaryEmbedding: rotary position embeddings (RoPE) as a module that owns the tables, a thin
// shell around ops::rotary_embedding (the formula, the interleaved-pair convention and the paper:
// ops/rotary.hpp). It rotates the queries and keys of an attention, not the token embedding:
//
//     qkv = c_attn(x);                                 // (B, T, 3C)
//     qkv = rotary->forward_qkv(qkv, /*offset=*/L);    // positions L .. L+T-1 (L: keys cached)
//     y = ops::causal_self_attention(qkv, n_head);     // or any attention on q, k, v
//
// The tables "cos" and "sin", (max_len, head_dim / 2), are NON-PERSISTENT buffers: they follow
// from the options alone and are computed again by the constructor, so they stay out of
// state_dict() (PyTorch's persistent=False, as Hugging Face's LLaMA keeps its inv_freq): a
// checkpoint holds only what was learned, and a model built with another max_len loads it.
#pragma once

#include <cstdint>
#include <string>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/options.hpp"

namespace tapegrad::nn {

struct RotaryEmbeddingOptions {
  RotaryEmbeddingOptions(std::int64_t head_dim, std::int64_t max_len)
      : head_dim_(head_dim), max_len_(max_len) {}
  /// Columns of one head (even, >= 2): they turn in head_dim / 2 pairs.
  TAPEGRAD_ARG(std::int64_t, head_dim);
  /// Positions the tables cover (>= 1): offset + T may not exceed it.
  TAPEGRAD_ARG(std::int64_t, max_len);
  /// theta_p = base^(-2p / head_dim) (> 0; default 10000, the paper's and LLaMA's).
  TAPEGRAD_ARG(double, base) = 10000.0;
};

class RotaryEmbedding : public Module {
 public:
  /// ValueError for an odd or non-positive head_dim, max_len < 1 or base <= 0.
  explicit RotaryEmbedding(RotaryEmbeddingOptions options);

  /// x (*, T, C), C a multiple of head_dim, each head rotated at positions offset .. offset+T-1
  /// -> the same shape. q or k as (B, T, C), or (B, n_head, T, head_dim).
  Tensor forward(const Tensor& x, std::int64_t offset = 0);
  /// qkv (B, T, 3C): queries and keys rotated, values passed through -> (B, T, 3C).
  Tensor forward_qkv(const Tensor& qkv, std::int64_t offset = 0);
  const RotaryEmbeddingOptions& options() const { return options_; }

  Buffer cos;  ///< "cos", (max_len, head_dim / 2), non-persistent
  Buffer sin;  ///< "sin", (max_len, head_dim / 2), non-persistent

  std::string type_name() const override { return "RotaryEmbedding"; }
  /// "head_dim=16, max_len=64, base=10000.0"
  void extra_repr(std::ostream& os) const override;

 private:
  RotaryEmbeddingOptions options_;
};

}  // namespace tapegrad::nn
