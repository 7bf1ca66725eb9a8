// src/io/dtypes.cpp: the safetensors element types — names, sizes, the byte count of a shape,
// and the exact conversion of IEEE half floats to float32.
#include "dtypes.hpp"

#include <array>

namespace tapegrad::io {

namespace {
struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};
// In the reference's order (safetensors/src/tensor.rs), which is also the enum's.
constexpr std::array<DtypeInfo, 15> kDtypes{{
    {Dtype::BOOL, "BOOL", 1},
    {Dtype::U8, "U8", 1},
    {Dtype::I8, "I8", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1},
    {Dtype::F8_E4M3, "F8_E4M3", 1},
    {Dtype::I16, "I16", 2},
    {Dtype::U16, "U16", 2},
    {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2},
    {Dtype::I32, "I32", 4},
    {Dtype::U32, "U32", 4},
    {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},
    {Dtype::I64, "I64", 8},
    {Dtype::U64, "U64", 8},
}};
const DtypeInfo& info(Dtype dtype) { return kDtypes.at(static_cast<std::size_t>(dtype)); }
}  // namespace

std::size_t dtype_size(Dtype dtype) { return info(dtype).size; }
std::string_view dtype_name(Dtype dtype) { return info(dtype).name; }
std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const DtypeInfo& d : kDtypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

std::optional<std::uint64_t> byte_count(const Shape& shape, std::size_t element_size) {
  std::uint64_t n = 1;
  for (std::size_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) return std::nullopt;
  if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(element_size), &n)) return std::nullopt;
  return n;
}

// Layout of a half: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  std::uint32_t bits;
  if (exponent == 0x1F) {  // Inf or NaN
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // signed zero
    bits = sign;
  } else {                              // subnormal half: normal as a float
    std::uint32_t e = 113;              // 2^-14 is float exponent 113 (127 - 14)
    while ((mantissa & 0x400u) == 0) {  // shift until the implicit 1 appears
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace tapegrad::io
