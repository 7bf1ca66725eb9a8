// tests/docs/test_readme.cpp: the README's list of library targets and its layout paragraph name
// every layer CMakeLists.txt builds (tapegrad_layer(<name> ...)), and its reading time for the
// tour is the one docs/tour.md states; it stays under 400 lines.
#include <doctest/doctest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "source_text.hpp"

namespace {

using tapegrad::testing::source_text;

// The README's paragraph that starts with `start`, up to the next blank line.
std::string paragraph(const std::string& readme, const std::string& start) {
  const std::size_t at = readme.find(start);
  REQUIRE_MESSAGE(at != std::string::npos, "README.md has no paragraph starting '", start, "'");
  return readme.substr(at, readme.find("\n\n", at) - at);
}

}  // namespace

TEST_SUITE("docs.readme") {
  TEST_CASE("the README names every library target, in its layout and in its list of targets") {
    const std::string cmake = source_text("CMakeLists.txt"), readme = source_text("README.md");
    const std::string layout = paragraph(readme, "`ls src` is the architecture");
    const std::string targets = paragraph(readme, "The library is a stack of layers");
    const std::regex layer(R"(\ntapegrad_layer\((\w+) |\n\s+tapegrad_layer\((\w+) )");
    int layers = 0;
    for (std::sregex_iterator it(cmake.begin(), cmake.end(), layer), end; it != end; ++it) {
      const std::string name = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      ++layers;
      CHECK_MESSAGE(layout.find("`" + name + "`") != std::string::npos,
                    "README.md's layout paragraph does not name the layer ", name);
      const bool listed = targets.find("`" + name + "`") != std::string::npos ||
                          targets.find("`tapegrad::" + name + "`") != std::string::npos;
      CHECK_MESSAGE(listed, "README.md's list of targets does not name tapegrad::", name);
    }
    CHECK(layers >= 9);
  }

  TEST_CASE("the README's reading time for the tour is the tour's own") {
    std::smatch m;
    const std::string tour = source_text("docs/tour.md"), readme = source_text("README.md");
    REQUIRE(std::regex_search(tour, m, std::regex(R"(lines: about (\d+) minutes\*\*)")));
    const std::string minutes = "bottom up in about " + m[1].str() + " minutes";
    CHECK_MESSAGE(readme.find(minutes) != std::string::npos, "README.md should say '", minutes,
                  "'");
  }

  TEST_CASE("the README, the front door, stays under 400 lines") {
    // Tables of runs and per-machine logs belong in docs/performance.md and docs/benchmarks.md.
    const std::string readme = source_text("README.md");
    const auto lines = std::count(readme.begin(), readme.end(), '\n');
    CHECK_MESSAGE(lines < 400, "README.md has ", lines,
                  " lines: move tables of runs and per-machine figures to docs/");
  }
}
