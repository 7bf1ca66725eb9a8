// src/ops/attention_kernels.hpp (private)
//
// Scaled dot-product attention's kernels: the references are defined in attention.cpp, their fast
// versions in src/kernels/attention.cpp (src/core/dispatch.hpp). The op (attention.cpp) checks,
// broadcasts the mask, draws the dropout keep mask, allocates, calls the forward and records a
// backward that calls the same set's backward.
// Layout: q (B, Tq, h*dk), k (B, Tk, h*dk), v (B, Tk, h*dv), out (B, Tq, h*dv); head i of batch b
// is the (T, d) block starting at column i * d of row b * T. allowed (B, Tq, Tk): 0 where the
// score is masked, null for no mask; p, keep and p_used are (B, h, Tq, Tk).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/dispatch.hpp"

namespace tapegrad::kernels {

struct AttentionDims {
  std::size_t B, Tq, Tk, h, dk, dv;
};

}  // namespace tapegrad::kernels

namespace tapegrad::ops {

using kernels::AttentionDims;

/// s = (q_r . k_j) / root_dk (root_dk = float(sqrt(dk))), or -1e9 where !allowed;
/// p = softmax(s) by rows (written whole);
/// out_r = sum_j w_rj v_j with w = p, or, when keep is not null, w = p_used = p * (keep ?
/// drop_scale : 0) (written whole). out is written, not added.
void attention_forward(const float* q, const float* k, const float* v, const std::uint8_t* allowed,
                       const std::uint8_t* keep, float drop_scale, float root_dk, float* p,
                       float* p_used, float* out, const AttentionDims& d);
/// dq, dk, dv = dL/dq, dL/dk, dL/dv (written, not added) from dout and the forward's inputs, p
/// and, when keep is not null, keep, drop_scale and p_used. A null output is not computed.
void attention_backward(const float* dout, const float* q, const float* k, const float* v,
                        const std::uint8_t* allowed, const std::uint8_t* keep, float drop_scale,
                        float root_dk, const float* p, const float* p_used, float* dq, float* dk,
                        float* dv, const AttentionDims& d);

}  // namespace tapegrad::ops
