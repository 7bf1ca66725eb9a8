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
// (GPT-NeoX and Hugging Face's LLaMA pair column i with i + head_dim / 2 instead, "rotate half";
// the two are the same model after a permutation of the q and k rows of the projection.)
// The tables cos and sin, (max_len, head_dim / 2), are constants: no gradient reaches them.
// Positions start at `offset`, so a decoder with a cache of L keys rotates new tokens from L.
#pragma once

#include <cstdint>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// The tables of the rotation: cos[m, p] = cos(m theta_p) and sin[m, p] = sin(m theta_p), each
/// (max_len, head_dim / 2), theta_p = base^(-2p / head_dim); angles in double, stored float32.
/// ValueError for an odd or non-positive head_dim, max_len < 1 or base <= 0.
struct RotaryTable {
  Array cos, sin;
};
RotaryTable rotary_table(std::int64_t head_dim, std::int64_t max_len, double base = 10000.0);

/// x (*, T, C) with C a multiple of head_dim = 2 * cos.shape[1]: every head of every row at
/// position offset + t (t = 0 .. T-1) rotated -> the same shape. For q or k laid out (B, T, C)
/// or, with C = head_dim, (B, n_head, T, head_dim). ShapeError for a bad shape or
/// offset + T > max_len, ValueError for offset < 0 or tables that require grad.
Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin,
                        std::int64_t offset = 0);

/// qkv (B, T, 3C), the packed output of a fused projection (ops::causal_self_attention's input):
/// the query and key thirds rotated head by head as rotary_embedding does, the values passed
/// through unchanged -> (B, T, 3C). The same errors.
Tensor rotary_embedding_qkv(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                            std::int64_t offset = 0);

}  // namespace tapegrad::ops
