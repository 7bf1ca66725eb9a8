// src/io/dtypes.hpp (private to the library)
//
// What the checkpoint code needs to know about the file's element types beyond the public
// dtype_size / dtype_name / dtype_from_name: a tensor's size in bytes without overflow, and the
// conversions of the 16-bit floats to float32. File data are little-endian and so is every host
// tapegrad supports (the static_assert below), so bytes are copied as they are.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>

#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

static_assert(std::endian::native == std::endian::little,
              "tapegrad's checkpoint code copies little-endian file data as is: a little-endian "
              "host (x86-64, AArch64) is required");
static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "shapes and offsets are 64-bit");

/// numel(shape) * element_size, or nullopt when it does not fit in 64 bits. Multiplies left to
/// right as the reference does, so [2^62, 8, 0] overflows although it holds no element.
std::optional<std::uint64_t> byte_count(const Shape& shape, std::size_t element_size);

/// IEEE binary16 -> binary32, exactly (every half is a float); NaN payloads are kept.
float half_to_float(std::uint16_t h);

/// bfloat16 is the top half of a float32.
inline float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// A T read from possibly unaligned little-endian bytes.
template <class T>
T load_le(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace tapegrad::io
