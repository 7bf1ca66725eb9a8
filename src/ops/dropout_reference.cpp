// src/ops/dropout_reference.cpp
//
// Dropout's reference kernels: plain loops, one element at a time, each multiplier drawn from
// its Philox block by dropout_multiplier (dropout_mask.hpp), no threads, no intrinsics
// (docs/kernels.md: read these first). The fast kernels (dropout_fast.cpp) draw the same numbers
// 64 blocks at a time (vectorised with AVX2) and split the elements over threads: the same mask
// and the same bits.
#include "dropout_kernels.hpp"
#include "dropout_mask.hpp"

namespace tapegrad::kernels::reference {
namespace {

// m[e] = keep(e) ? 1.0f / float(1 - p) : 0
// keep(e) = (x >> 8) >= ceil(p 2^24)
//   x = word e % 4 of philox(key = seed, counter = (e / 4, call))
float m(std::uint64_t seed, std::uint64_t call, double p, std::size_t e) {
  return ops::dropout_multiplier(seed, call, p, e);
}

// y[e] = x[e] * m[e]   (forward, and backward with x = y = the gradient)
void apply(std::uint64_t seed, std::uint64_t call, double p, const float* x, float* y,
           std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) y[e] = x[e] * m(seed, call, p, e);
}

// y[b, i] = (x[b, i] + rows[i]) * m[b n + i]
void add_rows_apply(std::uint64_t seed, std::uint64_t call, double p, const float* x,
                    const float* rows, float* y, std::size_t B, std::size_t n) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i)
      y[b * n + i] = (x[b * n + i] + rows[i]) * m(seed, call, p, b * n + i);
}

// y[b, i] = x[b, i] + rows[i]   (add_rows_apply when nothing is dropped)
void add_rows(const float* x, const float* rows, float* y, std::size_t B, std::size_t n) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i) y[b * n + i] = x[b * n + i] + rows[i];
}

// keep[e] = m[e] != 0
void mask(std::uint64_t seed, std::uint64_t call, double p, std::uint8_t* keep, std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) keep[e] = m(seed, call, p, e) != 0.0f;
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const DropoutKernels dropout{apply, add_rows_apply, add_rows, mask};

}  // namespace tapegrad::kernels::reference
