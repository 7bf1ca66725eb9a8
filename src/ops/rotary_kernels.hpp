// src/ops/rotary_kernels.hpp (private to src/ops)
//
// Rotary position embeddings' kernels, one table per kernel set (src/kernels/kernel_sets.hpp): the
// reference in rotary_reference.cpp, the fast ones compiled from rotary_fast.cpp. The op
// (rotary.cpp) checks, allocates, calls kernels::rotary_kernels().forward and records a backward
// that calls .backward of the same table.
#pragma once

#include <cstddef>

#include "../kernels/kernel_sets.hpp"

namespace tapegrad::kernels {

/// x seen as (outer, T, W), rows of W contiguous floats; row t sits at position offset + t. Its
/// first `rotated` columns are heads of 2 * half columns, turned pair by pair; the others are
/// copied. cos and sin are (max_len, half) tables, max_len >= offset + T.
struct RotaryLayout {
  std::size_t outer, T, W, rotated, half, offset;
};

struct RotaryKernels {
  /// y = R x: for pair p of a head at position m, c = cos[m, p], s = sin[m, p]:
  /// y0 = x0 c - x1 s, y1 = x0 s + x1 c.
  void (*forward)(const float* x, const float* cos, const float* sin, float* y,
                  const RotaryLayout& layout);
  /// dx = R^T dy (written, not added): dx0 = dy0 c + dy1 s, dx1 = -dy0 s + dy1 c.
  void (*backward)(const float* dy, const float* cos, const float* sin, float* dx,
                   const RotaryLayout& layout);
};

TAPEGRAD_KERNEL_TABLES(RotaryKernels, rotary)

}  // namespace tapegrad::kernels
