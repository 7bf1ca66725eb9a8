// tests/test_files.hpp: the files a test writes: an empty folder of its own under the build
// folder, that folder as the working directory for a scope, a file written, a file's bytes read
// back.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tapegrad::testing {

/// An empty folder for one test's files: build/test_output/<suite>/<name>, emptied first.
inline std::filesystem::path fresh_folder(const std::string& suite, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(TAPEGRAD_BINARY_DIR) / "test_output" / suite / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// `dir` as the working directory while it lives (relative paths, as a docs example writes them,
/// are read from it); the previous one afterwards.
class InFolder {
 public:
  explicit InFolder(const std::filesystem::path& dir) : old_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InFolder() { std::filesystem::current_path(old_); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

 private:
  std::filesystem::path old_;
};

/// Writes `bytes` to `path`, replacing it.
inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A file's bytes ("" when it cannot be read).
inline std::string bytes_of(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace tapegrad::testing
