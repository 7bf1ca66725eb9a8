// src/io/checksums.hpp (private to the library)
//
// The per-tensor checksums of tapegrad's checkpoints. safetensors has no checksum of its own, so
// the writer stores one for each tensor in "__metadata__", where every safetensors reader keeps
// (and otherwise ignores) it:
//     "tapegrad.crc32c.embed.lut.weight": "1a2b3c4d"
// the CRC-32C of the tensor's bytes in the file, as 8 lowercase hex digits. Every other metadata
// entry (tapegrad's own, the caller's, the alias entries of tied tensors) has one too, of its
// value's UTF-8 bytes, under the entry's key after another prefix:
//     "tapegrad.metadata_crc32c.progress.step": "9ae0daaf"
// so that an edited setting or note is refused like a flipped bit in a tensor. The reader
// verifies each one present; files without them (written by PyTorch, safetensors or an older
// tapegrad) load as before, but a file with metadata checksums must have one for every entry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tapegrad::io {

inline constexpr std::string_view kChecksumPrefix = "tapegrad.crc32c.";

inline constexpr std::string_view kMetadataChecksumPrefix = "tapegrad.metadata_crc32c.";

/// A tensor's checksum entry.
inline bool is_checksum_key(std::string_view key) { return key.starts_with(kChecksumPrefix); }
/// A metadata entry's checksum entry.
inline bool is_metadata_checksum_key(std::string_view key) {
  return key.starts_with(kMetadataChecksumPrefix);
}
/// Either kind: the entries no checksum covers.
inline bool is_any_checksum_key(std::string_view key) {
  return is_checksum_key(key) || is_metadata_checksum_key(key);
}

/// "tapegrad.crc32c." + tensor name.
inline std::string checksum_key(std::string_view tensor) {
  return std::string(kChecksumPrefix) + std::string(tensor);
}
/// "tapegrad.metadata_crc32c." + metadata key.
inline std::string metadata_checksum_key(std::string_view key) {
  return std::string(kMetadataChecksumPrefix) + std::string(key);
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
