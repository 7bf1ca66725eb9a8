// src/io/file_formats.hpp (private to the library)
//
// The two formats io writes, as the atomic writer tells them apart when a save goes through a
// symbolic link (tapegrad/core/atomic_file.hpp): it replaces the file the link names only when
// that file is empty or already of the format being written.
#pragma once

#include <cstdint>
#include <string_view>

#include "tapegrad/core/atomic_file.hpp"

namespace tapegrad::io {

/// An 8-byte little-endian header length N, then the header's '{', N bytes that fit in the file.
inline bool is_safetensors_start(std::string_view start, std::uint64_t size) {
  if (start.size() < 9 || start[8] != '{') return false;
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(start[std::size_t(i)]);
  return n >= 2 && size >= 8 && n <= size - 8;
}

inline bool is_npy_start(std::string_view start, std::uint64_t) {
  return start.starts_with("\x93NUMPY");
}

inline constexpr FileFormat kSafetensorsFormat{"a safetensors file", is_safetensors_start};
inline constexpr FileFormat kNpyFormat{"a .npy file", is_npy_start};

/// The format of bytes about to be written, told as above, or null for any other.
inline const FileFormat* format_of_bytes(std::string_view bytes) {
  if (is_safetensors_start(bytes, bytes.size())) return &kSafetensorsFormat;
  if (is_npy_start(bytes, bytes.size())) return &kNpyFormat;
  return nullptr;
}

}  // namespace tapegrad::io
