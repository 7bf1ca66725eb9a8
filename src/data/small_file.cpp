// src/data/small_file.cpp: a tokenizer's file read whole (small_file.hpp).
#include "small_file.hpp"

#include <filesystem>
#include <fstream>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::data::detail {

namespace fs = std::filesystem;

std::string read_small_file(const std::string& path, std::string_view who, std::uint64_t max_bytes,
                            std::string_view what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) fail<DataError>(who, ": cannot read ", path, ": no such file");
  if (!fs::is_regular_file(st))
    fail<DataError>(who, ": ", path, " is not a regular file (a folder, a FIFO or a device)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) fail<DataError>(who, ": cannot read ", path, ": ", ec.message());
  if (size > max_bytes)
    fail<DataError>(who, ": ", path, " holds ", size, " bytes, more than the ", max_bytes >> 20,
                    " MiB ", what, " may have");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<DataError>(who, ": cannot read ", path);
  std::string bytes(size, '\0');
  in.read(bytes.data(), std::streamsize(size));
  if (!in || std::size_t(in.gcount()) != size) fail<DataError>(who, ": cannot read ", path);
  return bytes;
}

}  // namespace tapegrad::data::detail
