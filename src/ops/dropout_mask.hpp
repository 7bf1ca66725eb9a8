// src/ops/dropout_mask.hpp (private to src/ops)
//
// DropoutMask: the multipliers m[e] = keep(e) ? 1 / (1 - p) : 0 of one dropout mask, computed a
// chunk at a time from its counter-based stream (src/philox.hpp) wherever they are applied: by
// ops::dropout, add_rows_dropout and embedding_add_rows_dropout, in forward and again in backward.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>

#include "../philox.hpp"
#include "tapegrad/ops/dropout.hpp"

namespace tapegrad::ops {

// scale = 1.0f / float(1 - p): PyTorch divides a 0/1 float mask by (1 - p), which rounds the same way.
inline float keep_scale(double p) { return p == 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - p); }

struct DropoutMask {
  DropoutStream stream;
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
    detail::for_each_mask_chunk(stream.seed, stream.call, detail::keep_threshold(p), keep_scale(p),
                                begin, end, std::forward<F>(f));
  }
};

}  // namespace tapegrad::ops
