// tests/nn/test_layer_norm.cpp: the LayerNorm module in both variants — names, initial values,
// forward through the op, gradcheck, printing, validation.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
std::vector<std::string> names(const Module& m) {
  std::vector<std::string> out;
  for (const auto& [n, p] : m.named_parameters()) out.push_back(n);
  return out;
}
}  // namespace

TEST_SUITE("nn.layer_norm") {
  TEST_CASE(
      "PyTorch's LayerNorm has weight and bias, the tutorial's has a_2 and b_2, ones and zeros") {
    LayerNorm torch_ln(4);
    LayerNorm tutorial_ln(LayerNormOptions::annotated(4));
    CHECK(names(torch_ln) == std::vector<std::string>{"weight", "bias"});
    CHECK(names(tutorial_ln) == std::vector<std::string>{"a_2", "b_2"});
    for (const LayerNorm* ln : {&torch_ln, &tutorial_ln}) {
      CHECK(bit_equal(ln->weight.data(), xt::ones<float>({4})));
      CHECK(bit_equal(ln->bias.data(), xt::zeros<float>({4})));
    }
    CHECK(tutorial_ln.options().eps() == 1e-6);
    CHECK(torch_ln.options().eps() == 1e-5);
    CHECK(LayerNorm(LayerNormOptions({3}).elementwise_affine(false)).parameters().empty());
  }

  TEST_CASE("forward is ops::layer_norm with the module's parameters and options") {
    Generator gen(1);
    Tensor x(randn({2, 3, 4}, &gen));
    for (const LayerNormOptions& o : {LayerNormOptions({4}), LayerNormOptions::annotated(4)}) {
      LayerNorm ln(o);
      {
        autograd::NoGradGuard no_grad;
        ln.weight.mutable_data() = randn({4}, &gen);
        ln.bias.mutable_data() = randn({4}, &gen);
      }
      const Tensor expected = ops::layer_norm(
          x, {4}, ln.weight, ln.bias, LayerNormFuncOptions().eps(o.eps()).variant(o.variant()));
      CHECK(bit_equal(ln.forward(x).data(), expected.data()));
    }
  }

  TEST_CASE("the module passes gradcheck for its input and both parameters") {
    Generator gen(2);
    LayerNorm ln(LayerNormOptions::annotated(5));
    {
      autograd::NoGradGuard no_grad;
      ln.weight.mutable_data() = randn({5}, &gen);
    }
    Tensor x(randn({3, 5}, &gen), true);
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>& t) {
          return ops::layer_norm(
              t[0], {5}, t[1], t[2],
              LayerNormFuncOptions().eps(1e-6).variant(LayerNormVariant::annotated));
        },
        {x, ln.weight, ln.bias});
    CHECK_MESSAGE(r.ok, r.message);
    ops::sum(ln.forward(x) * ln.forward(x)).backward();
    CHECK(ln.weight.has_grad());
    CHECK(ln.bias.has_grad());
  }

  TEST_CASE("LayerNorm prints like PyTorch, and says when it is the tutorial's variant") {
    CHECK(LayerNorm(512).repr() == "LayerNorm((512,), eps=1e-05, elementwise_affine=True)");
    CHECK(LayerNorm(LayerNormOptions::annotated(8)).repr() ==
          "LayerNorm((8,), eps=1e-06, elementwise_affine=True, variant=annotated)");
  }

  TEST_CASE("bad options are refused at construction, and a wrong input names the module") {
    CHECK_THROWS_WITH_AS(LayerNorm(LayerNormOptions(std::vector<std::int64_t>{})),
                         doctest::Contains("at least one"), ValueError);
    CHECK_THROWS_WITH_AS(LayerNorm(-2), doctest::Contains("non-negative sizes"), ValueError);
    CHECK_THROWS_WITH_AS(LayerNorm(LayerNormOptions({2}).eps(-1.0)),
                         doctest::Contains("expected eps >= 0"), ValueError);
    LayerNorm ln(4);
    CHECK_THROWS_WITH_AS(ln.forward(Tensor(xt::zeros<float>({2, 3}))),
                         doctest::Contains("| LayerNorm: expected x"), ShapeError);
  }

}  // TEST_SUITE
