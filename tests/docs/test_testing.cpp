// tests/docs/test_testing.cpp: what docs/testing.md and the checklist of examples/README.md say of
// the tests' includes is true: a new op's test includes the op's own header, and neither it nor
// tests/helpers.hpp needs an umbrella header, so adding an op lists it in no umbrella.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

std::string text_of(const std::string& relative) {
  std::ifstream in(std::string(TAPEGRAD_SOURCE_DIR) + "/" + relative);
  REQUIRE_MESSAGE(in, "cannot read ", relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An #include of an umbrella header: tapegrad/core.hpp, tapegrad/nn.hpp, ..., tapegrad/tapegrad.hpp.
const std::regex kUmbrella(R"(#include [<"]tapegrad/[a-z_]+\.hpp[>"])");

}  // namespace

TEST_SUITE("docs.testing") {
  TEST_CASE("the op tests' helpers include no umbrella header, and a new op's test its own header") {
    CHECK_FALSE(std::regex_search(text_of("tests/helpers.hpp"), kUmbrella));
    const std::string clamp_test = text_of("tests/ops/test_clamp.cpp");
    CHECK_FALSE(std::regex_search(clamp_test, kUmbrella));
    CHECK(clamp_test.find("#include <tapegrad/ops/clamp.hpp>") != std::string::npos);
  }

  TEST_CASE("the checklist for a new op or layer does not ask for a line in an umbrella header") {
    const std::string readme = text_of("examples/README.md");
    const std::size_t at = readme.find("### Checklist");
    REQUIRE(at != std::string::npos);
    const std::string checklist = readme.substr(at, readme.find("\n---", at) - at);
    CHECK(checklist.find("to `include/tapegrad/core.hpp`") == std::string::npos);
    CHECK(checklist.find("umbrella headers:") == std::string::npos);
    CHECK(checklist.find("includes the op's own header") != std::string::npos);
  }
}  // TEST_SUITE
