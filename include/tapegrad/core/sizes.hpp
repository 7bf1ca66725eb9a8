// include/tapegrad/core/sizes.hpp
//
// Where a shape becomes a count of elements, and then an allocation. The sizes of a shape
// multiply into its number of elements and, inside xtensor, into signed 64-bit strides; a product
// that does not fit wraps around silently: Embedding(67280421310721, 274177) asks for
// 2^64 + 1 floats, which wraps to ONE, and the first lookup reads far outside it. Every place
// where sizes a user chose turn into an array (module constructors, reshape, broadcasting, the
// random fills, the checkpoint readers) goes through these helpers first, and so should a layer
// of your own that allocates from its options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/core/errors.hpp"

namespace tapegrad {

/// Whether the sizes of `shape` (and its non-zero sizes) multiply to at most 2^63 - 1; then *numel
/// is their product. The check of checked_numel, without building a message.
inline bool numel_fits(const Shape& shape, std::size_t* numel) {
  std::uint64_t n = 1, nonzero = 1;
  constexpr std::uint64_t max = (std::uint64_t(1) << 63) - 1;
  for (std::size_t d : shape) {
    if (d == 0) {
      n = 0;
      continue;
    }
    if (__builtin_mul_overflow(nonzero, std::uint64_t(d), &nonzero) || nonzero > max) return false;
    n = n == 0 ? 0 : nonzero;
  }
  *numel = static_cast<std::size_t>(n);
  return true;
}

/// Whether the non-zero sizes of `shape` multiply to at most 2^63 - 1, so that xtensor's strides
/// fit: what a reader checks before a shape read from a file reaches xtensor.
inline bool fits_in_strides(const Shape& shape) {
  std::size_t numel = 0;
  return numel_fits(shape, &numel);
}

/// The number of elements of `shape`. ShapeError naming `where` and the shape when its sizes
/// multiply past 2^63 - 1, or when its non-zero sizes do (xtensor multiplies those into strides
/// even when another size is 0 and the array is empty).
std::size_t checked_numel(const Shape& shape, const std::string& where);

/// A shape from sizes given as signed integers (module options, reshape's list): ValueError
/// naming `what` for a negative size, then the checks of checked_numel.
Shape checked_shape(const std::vector<std::int64_t>& sizes, const std::string& where,
                    const std::string& what);

/// Throws OutOfMemoryError when an array of `shape` needs more bytes than this machine's memory
/// (the kernel would only kill the process when the pages are touched). Calls checked_numel.
void check_allocation(const Shape& shape, std::size_t element_size, const std::string& where);

/// A new float array of `shape` whose values are not initialised, after check_allocation; a
/// failed allocation becomes OutOfMemoryError naming `where` and the bytes asked for.
xt::xarray<float> new_array(const Shape& shape, const std::string& where);

}  // namespace tapegrad
