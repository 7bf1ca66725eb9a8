// tests/nn/test_activation.cpp: the GELU and SiLU modules: PyTorch's printed forms, GELU's two forms and
// its error text.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

TEST_SUITE("nn.activation") {
  TEST_CASE("GELU is ops::gelu as a module, printed as PyTorch prints it, with no parameters") {
    nn::GELU exact, tanh_form("tanh");
    CHECK(exact.repr() == "GELU(approximate='none')");
    CHECK(tanh_form.repr() == "GELU(approximate='tanh')");
    CHECK(exact.named_parameters().empty());
    const Tensor x = testing::input({2, 5}, 1, false);
    CHECK(testing::bit_equal(exact.forward(x).data(), ops::gelu(x).data()));
    CHECK(testing::bit_equal(tanh_form.forward(x).data(), ops::gelu(x, "tanh").data()));
  }

  TEST_CASE("GELU refuses an unknown approximation when it is built") {
    CHECK_THROWS_WITH_AS(nn::GELU("erf"),
                         doctest::Contains("approximate argument must be either none or tanh"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        nn::GELU("erf"),
        doctest::Contains("GELU: expected approximate \"none\" or \"tanh\", got \"erf\""),
        ValueError);
  }

  TEST_CASE("nn::SiLU is ops::silu as a module, printed as PyTorch prints it") {
    nn::SiLU silu;
    const Tensor x = testing::input({2, 3}, 4, false);
    CHECK(testing::bit_equal(silu.forward(x).data(), ops::silu(x).data()));
    CHECK(silu.repr() == "SiLU()");
    CHECK(silu.named_parameters().empty());
  }

}  // TEST_SUITE
