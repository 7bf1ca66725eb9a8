// tests/nn/test_init.cpp: xavier_uniform_ — the bound, the draws, the fans, errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.init") {
  TEST_CASE(
      "xavier_uniform_ draws U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) in row-major "
      "order") {
    Parameter w(xt::zeros<float>({300, 200}));
    Generator gen(3), same(3);
    const std::uint64_t before = w.version();
    nn::init::xavier_uniform_(w, 2.0, &gen);
    CHECK(w.version() > before);
    const double a = 2.0 * std::sqrt(6.0 / 500.0);
    Array expected = Array::from_shape({300, 200});
    uniform_(expected, -a, a, &same);
    CHECK(bit_equal(w.data(), expected));
    const auto [lo, hi] = std::minmax_element(w.data().begin(), w.data().end());
    CHECK(*hi <= a);
    CHECK(*lo >= -a);
    double sq = 0.0;
    for (float v : w.data()) sq += double(v) * v;
    CHECK(std::sqrt(sq / 60000.0) ==
          doctest::Approx(a / std::sqrt(3.0)).epsilon(0.02));  // std of U(-a, a)
  }

  TEST_CASE("fans count the receptive field beyond the first two dimensions") {
    CHECK(nn::init::calculate_fan_in_and_fan_out({8, 3}) == std::pair<double, double>{3.0, 8.0});
    CHECK(nn::init::calculate_fan_in_and_fan_out({8, 3, 5, 2}) ==
          std::pair<double, double>{30.0, 80.0});
  }

  TEST_CASE("a tensor of fewer than two dimensions has no fans") {
    Parameter b(xt::zeros<float>({4}));
    CHECK_THROWS_WITH_AS(
        nn::init::xavier_uniform_(b),
        doctest::Contains("Fan in and fan out can not be computed for tensor with fewer than 2 "
                          "dimensions"),
        ValueError);
  }

  TEST_CASE("initialising a parameter records nothing on the tape") {
    Parameter w(xt::zeros<float>({2, 2}));
    nn::init::xavier_uniform_(w);
    CHECK(autograd::tape().empty());
    CHECK(w.requires_grad());
    CHECK(w.is_leaf());
  }

}  // TEST_SUITE
