// src/ops/causal_attention_kernels.hpp (private to src/ops)
//
// Causal self-attention's kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the
// reference in causal_attention_reference.cpp, the fast ones compiled from
// causal_attention_fast.cpp. The op (causal_attention.cpp) checks, draws the dropout keep mask,
// allocates, calls kernels::causal_attention_kernels().forward and records a backward that calls
// .backward of the same table.
// Layout: qkv is (B, T, 3C) with C = H * hs; head h of batch b reads Q = qkv[b, :, h*hs ..],
// K = qkv[b, :, C + h*hs ..] and V = qkv[b, :, 2C + h*hs ..], each (T, hs) with leading dimension
// 3C, and writes y[b, :, h*hs ..], leading dimension C. p, keep and p_used are (B, H, T, T).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct CausalAttentionKernels {
  /// p = softmax over j <= i of (q_i . k_j) * scale, 0 above the diagonal (written whole);
  /// y_i = sum_j w[i, j] v_j with w = p, or, when keep is not null, w = p_used = p * (keep ?
  /// drop_scale : 0) (p_used written whole). y is written, not added.
  void (*forward)(const float* qkv, float* y, float* p, const std::uint8_t* keep, float drop_scale,
                  float* p_used, std::size_t B, std::size_t T, std::size_t H, std::size_t hs,
                  float scale);
  /// dqkv = dL/dqkv (every element written, not added) from dy (B, T, C), the forward's qkv, p
  /// and, when keep is not null, keep, drop_scale and p_used.
  void (*backward)(const float* dy, const float* qkv, const float* p, const std::uint8_t* keep,
                   float drop_scale, const float* p_used, float* dqkv, std::size_t B, std::size_t T,
                   std::size_t H, std::size_t hs, float scale);
};

TAPEGRAD_KERNEL_TABLES(CausalAttentionKernels, causal_attention)

}  // namespace tapegrad::kernels
