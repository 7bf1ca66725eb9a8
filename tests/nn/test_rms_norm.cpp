// tests/nn/test_rms_norm.cpp: the RMSNorm module, PyTorch 2.4's nn.RMSNorm: its parameter, options,
// printed form and errors (the op's values and gradients: tests/ops/test_rms_norm.cpp).
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

TEST_SUITE("nn.rms_norm") {
  TEST_CASE("RMSNorm has one parameter, weight (ones), and computes ops::rms_norm") {
    nn::RMSNorm norm(nn::RMSNormOptions({4}).eps(1e-6));
    const auto named = norm.named_parameters();
    REQUIRE(named.size() == 1);
    CHECK(named[0].first == "weight");
    CHECK(testing::bit_equal(norm.weight.data(), xt::ones<float>({4})));
    CHECK(norm.named_buffers().empty());
    {
      autograd::NoGradGuard no_grad;
      norm.weight.mutable_data()(1) = 3.0f;
    }
    const Tensor x = testing::input({2, 4}, 3, false);
    CHECK(testing::bit_equal(norm.forward(x).data(),
                             ops::rms_norm(x, {4}, norm.weight, 1e-6).data()));
    norm.reset_parameters();
    CHECK(norm.weight.data()(1) == 1.0f);
  }

  TEST_CASE("without elementwise_affine nothing is registered, and eps unset is the op default") {
    nn::RMSNorm norm(nn::RMSNormOptions({3}).elementwise_affine(false));
    CHECK(norm.named_parameters().empty());
    CHECK_FALSE(norm.weight.defined());
    const Tensor x = testing::input({2, 3}, 4, false);
    CHECK(testing::bit_equal(norm.forward(x).data(), ops::rms_norm(x, {3}).data()));
  }

  TEST_CASE("RMSNorm prints as PyTorch 2.4's nn.RMSNorm") {
    CHECK(nn::RMSNorm(8).repr() == "RMSNorm((8,), eps=None, elementwise_affine=True)");
    CHECK(nn::RMSNorm(nn::RMSNormOptions({2, 3}).eps(1e-5).elementwise_affine(false)).repr() ==
          "RMSNorm((2, 3), eps=1e-05, elementwise_affine=False)");
  }

  TEST_CASE("RMSNorm refuses bad options and names itself for a bad input") {
    CHECK_THROWS_WITH_AS(nn::RMSNorm(nn::RMSNormOptions({})),
                         doctest::Contains("RMSNorm: expected at least one dimension"), ValueError);
    CHECK_THROWS_WITH_AS(nn::RMSNorm(nn::RMSNormOptions({-1})),
                         doctest::Contains("RMSNorm: expected non-negative sizes"), ValueError);
    CHECK_THROWS_WITH_AS(nn::RMSNorm(nn::RMSNormOptions({3}).eps(-1.0)),
                         doctest::Contains("RMSNorm: expected eps >= 0, got -1"), ValueError);
    nn::RMSNorm norm(3);
    CHECK_THROWS_WITH_AS(norm.forward(testing::input({2, 4}, 1, false)),
                         doctest::Contains("RMSNorm: expected x to end with (3,), got (2, 4)"),
                         ShapeError);
  }

}  // TEST_SUITE
