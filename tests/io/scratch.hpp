// tests/io/scratch.hpp: a fresh, empty folder per test case for the file tests, under the build
// folder (TAPEGRAD_BINARY_DIR), so that CTest's parallel processes never share files.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tapegrad::testing {

inline std::filesystem::path scratch_dir(const std::string& test_name) {
  const auto dir = std::filesystem::path(TAPEGRAD_BINARY_DIR) / "io_scratch" / test_name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// The names in a folder, sorted.
inline std::vector<std::string> folder_listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Whether Debian's Python with NumPy can run (the interop tests skip, with a message, without it).
inline bool python_with_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

}  // namespace tapegrad::testing
