// tests/ops/test_activation.cpp: GELU in both of PyTorch's forms: values by hand, gradcheck,
// errors and the tape. Against PyTorch's goldens: tests/transformer/test_gpt_op_parity.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

TEST_SUITE("ops.activation") {
  TEST_CASE("gelu computes x * Phi(x) (erf form) and GPT-2's tanh approximation") {
    Tensor x(Array{-1.0f, 0.0f, 1.0f, 2.0f});
    const Tensor y = ops::gelu(x);
    for (std::size_t i = 0; i < 4; ++i) {
      const double v = x.data()(i);
      CHECK(y.data()(i) ==
            doctest::Approx(0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2))).epsilon(1e-6));
      const double u = std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v);
      CHECK(ops::gelu(x, "tanh").data()(i) ==
            doctest::Approx(0.5 * v * (1.0 + std::tanh(u))).epsilon(1e-6));
    }
    CHECK(y.data()(1) == 0.0f);
    CHECK(y.data()(2) == doctest::Approx(0.8413447).epsilon(1e-6));  // Phi(1)
  }

  TEST_CASE("gelu's gradient matches finite differences in both forms") {
    const Tensor x = testing::input({3, 5}, 7);
    for (const std::string form : {"none", "tanh"})
      testing::check_gradients([&](const std::vector<Tensor>& t) { return ops::gelu(t[0], form); },
                               {x});
  }

  TEST_CASE("gelu without a tape computes the same values") {
    const Tensor x = testing::input({2, 40}, 3);
    const Array with_tape = ops::gelu(x).data();
    autograd::NoGradGuard no_grad;
    CHECK(testing::bit_equal(ops::gelu(x).data(), with_tape));
  }

  TEST_CASE("gelu handles infinities and NaN as PyTorch does") {
    const float inf = std::numeric_limits<float>::infinity();
    Tensor x(Array{inf, -inf, std::numeric_limits<float>::quiet_NaN(), 100.0f, -100.0f});
    const Array y = ops::gelu(x).data(), t = ops::gelu(x, "tanh").data();
    CHECK(y(0) == inf);
    CHECK(std::isnan(y(1)));  // -inf * 0, as PyTorch's -inf * 0.5 * (1 + erf(-inf))
    CHECK(std::isnan(y(2)));
    CHECK(y(3) == 100.0f);
    CHECK(y(4) == -0.0f);
    CHECK(t(0) == inf);
    CHECK(std::isnan(t(1)));
    CHECK(t(3) == 100.0f);
    CHECK(t(4) == 0.0f);
  }

  TEST_CASE("gelu refuses an unknown approximation with PyTorch's message") {
    Tensor x(Array{1.0f});
    CHECK_THROWS_WITH_AS(ops::gelu(x, "fast"),
                         doctest::Contains("approximate argument must be either none or tanh"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::gelu(x, "fast"), doctest::Contains("got \"fast\""), ValueError);
  }

  TEST_CASE("gelu records one entry, and nothing under NoGradGuard") {
    Tensor x(Array{0.5f, -0.5f}, true);
    const std::size_t before = autograd::tape().size();
    {
      autograd::NoGradGuard no_grad;
      ops::gelu(x);
      CHECK(autograd::tape().size() == before);
    }
    Tensor loss = ops::sum(ops::gelu(x, "tanh"));
    CHECK(autograd::tape().size() == before + 2);
    loss.backward();
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
