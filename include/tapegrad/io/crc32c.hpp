// include/tapegrad/io/crc32c.hpp
//
// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF),
// the checksum tapegrad's checkpoint writer stores for each tensor and its reader verifies. The
// same function as Python's `crc32c` package, Rust's `crc32c` crate and the SSE4.2 crc32
// instruction, so a file's checksums can be checked with any of them:
//
//     io::crc32c("123456789") == 0xE3069283               // the standard check value
//     io::crc32c(b, io::crc32c(a)) == io::crc32c(a + b)   // chained over pieces
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tapegrad::io {

/// The CRC-32C of `size` bytes at `data`, continuing from `crc` (the CRC of the bytes before).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
inline std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0) {
  return crc32c(bytes.data(), bytes.size(), crc);
}

}  // namespace tapegrad::io
