// src/ops/causal_attention_kernels.hpp (private)
//
// Causal self-attention's kernels: the references are defined in causal_attention.cpp, their fast
// versions in src/kernels/causal_attention.cpp (src/core/dispatch.hpp). The op
// (causal_attention.cpp) checks, draws the dropout keep mask, allocates, calls the forward and
// records a backward that calls the same set's backward.
// Layout: qkv is (B, T, 3C) with C = H * hs; head h of batch b reads Q = qkv[b, :, h*hs ..],
// K = qkv[b, :, C + h*hs ..] and V = qkv[b, :, 2C + h*hs ..], each (T, hs) with leading dimension
// 3C, and writes y[b, :, h*hs ..], leading dimension C. p, keep and p_used are (B, H, T, T).
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
                              std::size_t H, std::size_t hs, float scale);
/// dqkv = dL/dqkv (every element written, not added) from dy (B, T, C), the forward's qkv, p
/// and, when keep is not null, keep, drop_scale and p_used. (A bias needs nothing more: the
/// softmax's backward reads p alone.)
void causal_attention_backward(const float* dy, const float* qkv, const float* p,
                               const std::uint8_t* keep, float drop_scale, const float* p_used,
                               float* dqkv, std::size_t B, std::size_t T, std::size_t H,
                               std::size_t hs, float scale);

}  // namespace tapegrad::ops
