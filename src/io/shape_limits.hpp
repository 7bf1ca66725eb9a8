// src/io/shape_limits.hpp (private to the library)
//
// A file can claim any shape. xtensor lays an array out by multiplying its trailing dimensions
// into signed 64-bit strides, even when another dimension is 0 and the array holds no element:
// shape (0, 2^40, 2^40) holds 0 bytes, which a byte count accepts, yet computing its strides
// overflows (undefined behaviour). The loaders refuse such a shape before it reaches xtensor.
#pragma once

#include <cstdint>
#include <limits>

#include "tapegrad/tensor.hpp"

namespace tapegrad::io {

/// Whether the product of the shape's non-zero dimensions fits in int64, so that every stride
/// (a product of some of them) does.
inline bool strides_fit(const Shape& shape) {
  std::int64_t n = 1;
  for (std::size_t d : shape) {
    if (d == 0) continue;
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        __builtin_mul_overflow(n, static_cast<std::int64_t>(d), &n))
      return false;
  }
  return true;
}

}  // namespace tapegrad::io
