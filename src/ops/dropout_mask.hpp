// src/ops/dropout_mask.hpp (private)
//
// DropoutMask: the multipliers m[e] = keep(e) ? 1 / (1 - p) : 0 of one dropout mask, computed a
// chunk at a time from its counter-based stream (src/core/philox.hpp) wherever they are applied: by
// the dropout kernels and the fused embedding, in forward and again in backward.
// dropout_multiplier: the same m[e], one element at a time, in the plain words of the definition
// (the reference kernels').
// Included by fast kernels, so defined in the per-set inline namespace (core/set_namespace.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "../core/set_namespace.hpp"
#include "../core/philox.hpp"

namespace tapegrad::ops {
inline namespace TAPEGRAD_SET_NAMESPACE {  // one copy per kernel set: core/set_namespace.hpp

// scale = 1.0f / float(1 - p): PyTorch divides a 0/1 float mask by (1 - p), which rounds the same
// way.
inline float keep_scale(double p) { return p == 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - p); }

// m[e] of the mask of stream (seed, call): element e takes word e % 4 of the Philox block with
// key (seed low, seed high) and counter (e / 4 low, e / 4 high, call low, call high), x, and is
// kept iff u = (x >> 8) 2^-24 >= p, i.e. iff x >> 8 >= ceil(p 2^24) (p = 1: nothing is kept).
inline float dropout_multiplier(std::uint64_t seed, std::uint64_t call, double p, std::size_t e) {
  const std::uint64_t q = e / 4;
  const std::uint32_t ctr[4] = {std::uint32_t(q), std::uint32_t(q >> 32), std::uint32_t(call),
                                std::uint32_t(call >> 32)};
  const std::uint32_t key[2] = {std::uint32_t(seed), std::uint32_t(seed >> 32)};
  std::uint32_t x[4];
  detail::philox4x32_10(ctr, key, x);
  return (x[e % 4] >> 8) >= detail::keep_threshold(p) ? keep_scale(p) : 0.0f;
}

struct DropoutMask {
  std::uint64_t seed, call;
  double p;
  // Calls f(first, n, m) over [begin, end) in chunks of at most detail::kMaskChunk elements, m the
  // chunk's multipliers; p = 1 needs no Philox: every m is 0.
  template <class F>
  void chunks(std::size_t begin, std::size_t end, F&& f) const {
    if (p == 1.0) {
      alignas(64) static constexpr float zeros[detail::kMaskChunk] = {};
      for (std::size_t first = begin; first < end; first += detail::kMaskChunk)
        f(first, std::min(detail::kMaskChunk, end - first), zeros);
      return;
    }
    detail::for_each_mask_chunk(seed, call, detail::keep_threshold(p), keep_scale(p), begin, end,
                                std::forward<F>(f));
  }
};

}  // namespace TAPEGRAD_SET_NAMESPACE
}  // namespace tapegrad::ops
