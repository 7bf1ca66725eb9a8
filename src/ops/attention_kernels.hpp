// src/ops/attention_kernels.hpp (private to src/ops)
//
// Scaled dot-product attention's kernels, one table per kernel set (src/kernels/kernel_sets.hpp):
// the reference in attention_reference.cpp, the fast ones compiled from attention_fast.cpp. The op
// (attention.cpp) checks, broadcasts the mask, draws the dropout keep mask, allocates, calls
// kernels::attention_kernels().forward and records a backward that calls .backward of the same
// table.
// Layout: q (B, Tq, h*dk), k (B, Tk, h*dk), v (B, Tk, h*dv), out (B, Tq, h*dv); head i of batch b
// is the (T, d) block starting at column i * d of row b * T. allowed (B, Tq, Tk): 0 where the
// score is masked, null for no mask; p, keep and p_used are (B, h, Tq, Tk).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

struct AttentionDims {
  std::size_t B, Tq, Tk, h, dk, dv;
};

struct AttentionKernels {
  /// s = (q_r . k_j) / root_dk (root_dk = float(sqrt(dk))), or -1e9 where !allowed;
  /// p = softmax(s) by rows (written whole);
  /// out_r = sum_j w_rj v_j with w = p, or, when keep is not null, w = p_used = p * (keep ?
  /// drop_scale : 0) (written whole). out is written, not added.
  void (*forward)(const float* q, const float* k, const float* v, const std::uint8_t* allowed,
                  const std::uint8_t* keep, float drop_scale, float root_dk, float* p,
                  float* p_used, float* out, const AttentionDims& d);
  /// dq, dk, dv = dL/dq, dL/dk, dL/dv (written, not added) from dout and the forward's inputs, p
  /// and, when keep is not null, keep, drop_scale and p_used. A null output is not computed.
  void (*backward)(const float* dout, const float* q, const float* k, const float* v,
                   const std::uint8_t* allowed, const std::uint8_t* keep, float drop_scale,
                   float root_dk, const float* p, const float* p_used, float* dq, float* dk,
                   float* dv, const AttentionDims& d);
};

TAPEGRAD_KERNEL_TABLES(AttentionKernels, attention)

}  // namespace tapegrad::kernels
