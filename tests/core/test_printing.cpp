// tests/core/test_printing.cpp: printing with nothing but <tapegrad/tapegrad.hpp> included, as a
// learner's first program does: a gradient, a tensor, a tape. (No xtensor header on purpose.)
#include <doctest/doctest.h>

#include <sstream>

#include <tapegrad/core.hpp>

using namespace tapegrad;

TEST_SUITE("printing") {
  TEST_CASE("a gradient prints with tapegrad.hpp alone, as xtensor prints an array") {
    // PyTorch prints tensor([2., 4.]); xtensor's layout is { 2.,  4.}
    Tensor w(Array{1.f, 2.f}, true);
    ops::sum(ops::mul(w, w)).backward();
    std::ostringstream os;
    os << w.grad();
    CHECK(os.str() == "{ 2.,  4.}");
    std::ostringstream ids;
    ids << IndexArray{3, 1};
    CHECK(ids.str() == "{3, 1}");
  }

  TEST_CASE("a tensor prints its summary, then its values when there are few") {
    Tensor t(Array{{1.f, 2.f}, {3.f, 4.f}});
    std::ostringstream os;
    os << t;
    CHECK(os.str().find("Tensor(shape=(2, 2), min=1, max=4") == 0);
    CHECK(os.str().find("{{ 1.,  2.},") != std::string::npos);
  }

}  // TEST_SUITE
