// include/tapegrad/nn/rotary_embedding.hpp
//
// RotaryEmbedding: rotary position embeddings (RoPE) as a module that owns the tables, a thin
// shell around ops::rotary_embedding (the formula, the two pairings of columns and the paper:
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
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/ops/rotary.hpp"

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
  /// Which columns turn together: interleaved (2p, 2p + 1) (default) or halves (p, p + d/2),
  /// Hugging Face's Llama.
  TAPEGRAD_ARG(ops::RotaryPairs, pairs) = ops::RotaryPairs::interleaved;
  /// The frequencies theta_p (head_dim / 2 of them), as a model's own rule computes them in
  /// float32 (transformers' Llama, with or without rope_scaling): the tables are then
  /// ops::rotary_table(inv_freq, max_len), in transformers' float32 arithmetic, and base is not
  /// used. Unset (default): ops::rotary_table(head_dim, max_len, base), in double.
  TAPEGRAD_ARG(std::optional<std::vector<float>>, inv_freq) = std::nullopt;
};

class RotaryEmbedding : public Module {
 public:
  /// ValueError for an odd or non-positive head_dim, max_len < 1 or base <= 0.
  explicit RotaryEmbedding(RotaryEmbeddingOptions options);

  /// x (*, T, C), C a multiple of head_dim, each head rotated at positions offset .. offset+T-1
  /// -> the same shape. q or k as (B, T, C), or (B, n_head, T, head_dim).
  Tensor forward(const Tensor& x, std::int64_t offset = 0);
  /// qkv (B, T, 3C): queries and keys rotated, values passed through -> (B, T, 3C). With
  /// n_kv_head, grouped-query attention's (B, T, (n_head + 2 n_kv_head) head_dim), as
  /// ops::rotary_embedding_qkv.
  Tensor forward_qkv(const Tensor& qkv, std::int64_t offset = 0,
                     std::optional<std::int64_t> n_kv_head = std::nullopt);
  const RotaryEmbeddingOptions& options() const { return options_; }

  Buffer cos;  ///< "cos", (max_len, head_dim / 2), non-persistent
  Buffer sin;  ///< "sin", (max_len, head_dim / 2), non-persistent

  std::string type_name() const override { return "RotaryEmbedding"; }
  /// "head_dim=16, max_len=64, base=10000.0" (and ", pairs=halves", ", inv_freq=given" when set)
  void extra_repr(std::ostream& os) const override;

 private:
  RotaryEmbeddingOptions options_;
};

}  // namespace tapegrad::nn
