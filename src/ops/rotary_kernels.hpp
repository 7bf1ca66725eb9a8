// src/ops/rotary_kernels.hpp (private)
//
// Rotary position embeddings' kernels, declared once: the references are defined in rotary.cpp,
// their fast versions in src/kernels/rotary.cpp (src/core/dispatch.hpp).
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::kernels {

/// x seen as (outer, T, W), rows of W contiguous floats; row t sits at position offset + t. Its
/// first `rotated` columns are heads of 2 * half columns, turned pair by pair; the others are
/// copied. Pair p of a head is columns (2p, 2p + 1), or (p, p + half) when `halves`. cos and sin
/// are (max_len, half) tables, max_len >= offset + T.
struct RotaryLayout {
  std::size_t outer, T, W, rotated, half, offset;
  bool halves = false;
};

}  // namespace tapegrad::kernels

namespace tapegrad::ops {

using kernels::RotaryLayout;

/// y = R x: for pair p = (x0, x1) of a head at position m, c = cos[m, p], s = sin[m, p]:
/// y0 = x0 c - x1 s, y1 = x0 s + x1 c.
void rotary_forward(const float* x, const float* cos, const float* sin, float* y,
                    const RotaryLayout& layout);
/// dx = R^T dy (written, not added): dx0 = dy0 c + dy1 s, dx1 = -dy0 s + dy1 c.
void rotary_backward(const float* dy, const float* cos, const float* sin, float* dx,
                     const RotaryLayout& layout);

}  // namespace tapegrad::ops
