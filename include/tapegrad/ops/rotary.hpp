// include/tapegrad/ops/rotary.hpp
//
// Rotary position embeddings (RoPE; Su et al., "RoFormer: Enhanced Transformer with Rotary
// Position Embedding", 2021): instead of adding a position vector to the token embedding, the
// queries and keys of every head are rotated by an angle proportional to their position, so the
// score q_m . k_n depends on the positions only through m - n. Head h's head_dim columns are taken
// as head_dim / 2 INTERLEAVED PAIRS (2p, 2p + 1), the paper's equation (34) and Meta's LLaMA code;
// pair p at position m turns by the angle m * theta_p, theta_p = base^(-2p / head_dim):
//   y[2p]     = x[2p] * cos(m theta_p) - x[2p+1] * sin(m theta_p)
//   y[2p + 1] = x[2p] * sin(m theta_p) + x[2p+1] * cos(m theta_p)
// GPT-NeoX and Hugging Face's Llama pair column p with p + head_dim / 2 instead (RotaryPairs::
// halves, transformers' `q * cos + rotate_half(q) * sin` with rotate_half([a, b]) = [-b, a]):
//   y[p]        = x[p] * cos(m theta_p) - x[p + half] * sin(m theta_p)
//   y[p + half] = x[p + half] * cos(m theta_p) + x[p] * sin(m theta_p)
// The two are the same model after a permutation of the q and k rows of the projection, but a
// checkpoint made with one gives other numbers under the other.
// The tables cos and sin, (max_len, head_dim / 2), are constants: no gradient reaches them.
// Positions start at `offset`, so a decoder with a cache of L keys rotates new tokens from L.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// Which columns of a head turn together.
enum class RotaryPairs {
  interleaved,  ///< (2p, 2p + 1): RoFormer's equation (34), Meta's LLaMA code (the default)
  halves,       ///< (p, p + head_dim / 2): GPT-NeoX's, Hugging Face's Llama ("rotate_half")
};

/// The tables of the rotation: cos[m, p] = cos(m theta_p) and sin[m, p] = sin(m theta_p), each
/// (max_len, head_dim / 2), theta_p = base^(-2p / head_dim); angles in double, stored float32.
/// ValueError for an odd or non-positive head_dim, max_len < 1 or base <= 0.
struct RotaryTable {
  Array cos, sin;
};
RotaryTable rotary_table(std::int64_t head_dim, std::int64_t max_len, double base = 10000.0);

/// The tables of given frequencies, in float32 arithmetic as transformers computes them:
/// angle = float(m) * inv_freq[p] rounded to float32 (its float32 matmul of positions and
/// frequencies), then cos and sin of that angle. inv_freq (head_dim / 2) comes from the model's
/// own rule (theta^(-2p / head_dim) in float32, or a rope_scaling's). ValueError for an empty
/// inv_freq, a frequency not finite or max_len < 1.
RotaryTable rotary_table(std::span<const float> inv_freq, std::int64_t max_len);

/// x (*, T, C) with C a multiple of head_dim = 2 * cos.shape[1]: every head of every row at
/// position offset + t (t = 0 .. T-1) rotated -> the same shape. For q or k laid out (B, T, C)
/// or, with C = head_dim, (B, n_head, T, head_dim). ShapeError for a bad shape or
/// offset + T > max_len, ValueError for offset < 0 or tables that require grad.
Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin,
                        std::int64_t offset = 0, RotaryPairs pairs = RotaryPairs::interleaved);

/// qkv (B, T, 3C), the packed output of a fused projection (ops::causal_self_attention's input):
/// the query and key thirds rotated head by head as rotary_embedding does, the values passed
/// through unchanged -> (B, T, 3C). With n_kv_head, the packed qkv of grouped-query attention,
/// (B, T, (n_head + 2 n_kv_head) head_dim): n_head query heads, then n_kv_head key heads (all
/// rotated), then n_kv_head value heads (passed through). The same errors; ShapeError when the
/// width is not whole heads, or leaves fewer query heads than n_kv_head; ValueError for
/// n_kv_head < 1.
Tensor rotary_embedding_qkv(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                            std::int64_t offset = 0, RotaryPairs pairs = RotaryPairs::interleaved,
                            std::optional<std::int64_t> n_kv_head = std::nullopt);

}  // namespace tapegrad::ops
