// tests/docs/test_tour.cpp: what docs/tour.md says of itself is true: the reading time it claims
// is its own lines at 11 a minute (plus one to open the page), the same for its stops 2, 3, 4 and
// 6, and the number of checks it says examples/first_training.cpp makes is the program's.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

std::vector<std::string> lines_of(const std::string& relative) {
  std::ifstream in(std::string(TAPEGRAD_SOURCE_DIR) + "/" + relative);
  REQUIRE_MESSAGE(in, "cannot read ", relative);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of the section whose heading starts with `heading`, up to the next "## " heading.
std::size_t section_lines(const std::vector<std::string>& page, const std::string& heading) {
  std::size_t first = page.size();
  for (std::size_t i = 0; i < page.size(); ++i)
    if (page[i].rfind(heading, 0) == 0) first = i;
  REQUIRE_MESSAGE(first < page.size(), "docs/tour.md has no heading '", heading, "'");
  std::size_t end = first + 1;
  while (end < page.size() && page[end].rfind("## ", 0) != 0) ++end;
  return end - first;
}

std::string joined(const std::vector<std::string>& page) {
  std::string text;
  for (const std::string& line : page) text += line + "\n";
  return text;
}

}  // namespace

TEST_SUITE("docs.tour") {
  TEST_CASE("the tour's reading time is its own lines at 11 a minute") {
    const std::vector<std::string> page = lines_of("docs/tour.md");
    const std::string text = joined(page);
    std::smatch m;
    REQUIRE_MESSAGE(
        std::regex_search(text, m,
                          std::regex(R"(\*\*\w+ stops, (\d+) lines: about (\d+) minutes\*\*)")),
        "the tour's first paragraph states its lines and minutes");
    CHECK(std::stoul(m[1]) == page.size());
    CHECK(std::stol(m[2]) == std::lround(double(page.size()) / 11 + 1));

    REQUIRE_MESSAGE(
        std::regex_search(
            text, m,
            std::regex(R"(Stops 2, 3, 4 and 6\s+\([^)]*\) are (\d+) lines, (\d+)\s+minutes)")),
        "the tour states the lines and minutes of stops 2, 3, 4 and 6");
    const std::size_t core = section_lines(page, "## 2.") + section_lines(page, "## 3.") +
                             section_lines(page, "## 4.") + section_lines(page, "## 6.");
    CHECK(std::stoul(m[1]) == core);
    CHECK(std::stol(m[2]) == std::lround(double(core) / 11));
    CHECK(text.find("what you read is what runs") == std::string::npos);  // the fast kernels run
  }

  TEST_CASE("the tour counts the checks first_training makes") {
    std::size_t checks = 0;  // each printed as "ok  " or "FAIL"
    for (const std::string& line : lines_of("examples/first_training.cpp"))
      if (line.find("? \"ok  \" : \"FAIL\"") != std::string::npos) ++checks;
    const char* const words[] = {"zero", "one", "two", "three", "four", "five", "six"};
    REQUIRE(checks < 7);
    const std::string said = std::string("checks ") + words[checks] + " things";
    CHECK_MESSAGE(joined(lines_of("docs/tour.md")).find(said) != std::string::npos,
                  "docs/tour.md should say first_training '", said, "'");
  }
}
