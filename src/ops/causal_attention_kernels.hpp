// src/ops/causal_attention_kernels.hpp (private)
//
// Causal self-attention's kernels: the references are defined in causal_attention.cpp, their fast
// versions in src/kernels/causal_attention.cpp (src/core/dispatch.hpp). The op
// (causal_attention.cpp) checks, draws the dropout keep mask, allocates, calls the forward and
// records a backward that calls the same set's backward.
// Layout: qkv is (B, T, (H + 2 KV) hs), H query heads, then KV key heads, then KV value heads
// (KV = H: three equal parts of C = H * hs). Query head h of batch b shares key/value head
// g = h / (H / KV): it reads Q = qkv[b, :, h*hs ..], K = qkv[b, :, H*hs + g*hs ..] and
// V = qkv[b, :, (H + KV)*hs + g*hs ..], each (T, hs) with leading dimension (H + 2 KV) hs, and
// writes y[b, :, h*hs ..], leading dimension C = H * hs. p, keep and p_used are (B, H, T, T).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// p = softmax over j <= i of (q_i . k_j) * scale + bias[h, i, j] (bias (H, T, T), or null for none),
/// 0 above the diagonal (written whole);
/// y_i = sum_j w[i, j] v_j with w = p, or, when keep is not null, w = p_used = p * (keep ?
/// drop_scale : 0) (p_used written whole). y is written, not added.
void causal_attention_forward(const float* qkv, const float* bias, float* y, float* p,
                              const std::uint8_t* keep,
                              float drop_scale, float* p_used, std::size_t B, std::size_t T,
                              std::size_t H, std::size_t KV, std::size_t hs, float scale);
/// dqkv = dL/dqkv (every element written, not added) from dy (B, T, C), the forward's qkv, p
/// and, when keep is not null, keep, drop_scale and p_used. (A bias needs nothing more: the
/// softmax's backward reads p alone.) A key/value head's gradient sums its query heads'
/// parts, in the order of the query heads.
void causal_attention_backward(const float* dy, const float* qkv, const float* p,
                               const std::uint8_t* keep, float drop_scale, const float* p_used,
                               float* dqkv, std::size_t B, std::size_t T, std::size_t H,
                               std::size_t KV, std::size_t hs, float scale);

}  // namespace tapegrad::ops
