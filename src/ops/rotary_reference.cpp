// src/ops/rotary_reference.cpp
//
// Rotary position embeddings' reference kernels: the maths as plain loops, one row at a time, no
// threads, no intrinsics (docs/kernels.md: read these first). The fast kernels (rotary_fast.cpp)
// make the same float operations, so they give the same bits (docs/semantics.md#kernel-sets).
#include "rotary_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// Row r = (o, t) of x sits at position m = offset + t. Its columns [0, rotated) are heads of
// 2 * half columns; pair p of a head, (x0, x1) = columns (2p, 2p + 1), turns by the angle
// m * theta_p, with c = cos[m, p] and s = sin[m, p]:
//   y0 = x0 c - x1 s        y1 = x0 s + x1 c           (y = R x, R a rotation)
// The columns [rotated, W) (the values of a packed qkv) are copied.
void forward(const float* x, const float* cos, const float* sin, float* y, const RotaryLayout& l) {
  for (std::size_t r = 0; r < l.outer * l.T; ++r) {
    const std::size_t m = l.offset + r % l.T;
    for (std::size_t col = 0; col < l.W; ++col) y[r * l.W + col] = x[r * l.W + col];
    for (std::size_t head = 0; head < l.rotated; head += 2 * l.half)
      for (std::size_t p = 0; p < l.half; ++p) {
        const float c = cos[m * l.half + p], s = sin[m * l.half + p];
        const float x0 = x[r * l.W + head + 2 * p], x1 = x[r * l.W + head + 2 * p + 1];
        y[r * l.W + head + 2 * p] = x0 * c - x1 * s;
        y[r * l.W + head + 2 * p + 1] = x0 * s + x1 * c;
      }
  }
}

// dx = R^T dy, the inverse turn (the angle negated):
//   dx0 = dy0 c + dy1 s     dx1 = -dy0 s + dy1 c
// and the copied columns pass dy through.
void backward(const float* dy, const float* cos, const float* sin, float* dx,
              const RotaryLayout& l) {
  for (std::size_t r = 0; r < l.outer * l.T; ++r) {
    const std::size_t m = l.offset + r % l.T;
    for (std::size_t col = 0; col < l.W; ++col) dx[r * l.W + col] = dy[r * l.W + col];
    for (std::size_t head = 0; head < l.rotated; head += 2 * l.half)
      for (std::size_t p = 0; p < l.half; ++p) {
        const float c = cos[m * l.half + p], s = sin[m * l.half + p];
        const float dy0 = dy[r * l.W + head + 2 * p], dy1 = dy[r * l.W + head + 2 * p + 1];
        dx[r * l.W + head + 2 * p] = dy0 * c + dy1 * s;
        dx[r * l.W + head + 2 * p + 1] = -dy0 * s + dy1 * c;
      }
  }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const RotaryKernels rotary{forward, backward};

}  // namespace tapegrad::kernels::reference
