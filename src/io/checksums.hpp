// src/io/checksums.hpp (private to the library)
//
// The per-tensor checksums of tapegrad's checkpoints. safetensors has no checksum of its own, so
// the writer stores one for each tensor in "__metadata__", where every safetensors reader keeps
// (and otherwise ignores) it:
//     "tapegrad.crc32c.embed.lut.weight": "1a2b3c4d"
// the CRC-32C of the tensor's bytes in the file, as 8 lowercase hex digits. The reader verifies
// each one present; files without them (written by PyTorch, safetensors or an older tapegrad)
// load as before.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tapegrad::io {

inline constexpr std::string_view kChecksumPrefix = "tapegrad.crc32c.";

inline bool is_checksum_key(std::string_view key) { return key.starts_with(kChecksumPrefix); }

/// "tapegrad.crc32c." + tensor name.
inline std::string checksum_key(std::string_view tensor) {
  return std::string(kChecksumPrefix) + std::string(tensor);
}

/// The checksum as the file stores it: 8 lowercase hex digits.
inline std::string checksum_text(std::uint32_t crc) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(8, '0');
  for (int i = 7; i >= 0; --i, crc >>= 4) s[static_cast<std::size_t>(i)] = digits[crc & 15u];
  return s;
}

/// The checksum of a stored text, or nullopt unless it is exactly 8 lowercase hex digits.
inline std::optional<std::uint32_t> parse_checksum(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  std::uint32_t crc = 0;
  for (char c : text) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    crc = crc << 4 | static_cast<std::uint32_t>(digit);
  }
  return crc;
}

}  // namespace tapegrad::io
