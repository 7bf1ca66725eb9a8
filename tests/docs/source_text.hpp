// tests/docs/source_text.hpp: the docs tests read the repository's own files.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tapegrad::testing {

/// The whole text of a file of the source tree, by its path from the top ("README.md").
inline std::string source_text(const std::string& relative) {
  std::ifstream in(std::string(TAPEGRAD_SOURCE_DIR) + "/" + relative);
  REQUIRE_MESSAGE(in, "cannot read ", relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace tapegrad::testing
