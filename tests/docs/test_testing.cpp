// tests/docs/test_testing.cpp: what docs/testing.md and the checklist of examples/README.md say of
// the tests' includes is true: a new op's test includes the op's own header, and neither it nor
// tests/helpers.hpp needs an umbrella header, so adding an op lists it in no umbrella.
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "source_text.hpp"

namespace {

using tapegrad::testing::source_text;

// An #include of an umbrella header: tapegrad/core.hpp, tapegrad/nn.hpp, ..., tapegrad/tapegrad.hpp.
const std::regex kUmbrella(R"(#include [<"]tapegrad/[a-z_]+\.hpp[>"])");

}  // namespace

TEST_SUITE("docs.testing") {
  TEST_CASE("the op tests' helpers include no umbrella header, and a new op's test its own header") {
    CHECK_FALSE(std::regex_search(source_text("tests/helpers.hpp"), kUmbrella));
    const std::string clamp_test = source_text("tests/ops/test_clamp.cpp");
    CHECK_FALSE(std::regex_search(clamp_test, kUmbrella));
    CHECK(clamp_test.find("#include <tapegrad/ops/clamp.hpp>") != std::string::npos);
  }

  TEST_CASE("the checklist for a new op or layer does not ask for a line in an umbrella header") {
    const std::string readme = source_text("examples/README.md");
    const std::size_t at = readme.find("### Checklist");
    REQUIRE(at != std::string::npos);
    const std::string checklist = readme.substr(at, readme.find("\n---", at) - at);
    CHECK(checklist.find("to `include/tapegrad/core.hpp`") == std::string::npos);
    CHECK(checklist.find("umbrella headers:") == std::string::npos);
    CHECK(checklist.find("includes the op's own header") != std::string::npos);
  }
}  // TEST_SUITE
