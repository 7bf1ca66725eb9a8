// tests/transformer/test_sublayer.cpp: SublayerConnection — x + dropout(sublayer(norm(x))), pre-norm.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.transformer.sublayer") {
  TEST_CASE("the residual adds the sub-layer of the NORMALISED input to the raw input") {
    SublayerConnection sub(4, 0.1);
    sub.eval();
    Generator gen(1);
    Tensor x(randn({2, 3, 4}, &gen));
    auto twice = [](const Tensor& t) { return t * 2.0; };
    CHECK(bit_equal(sub.forward(x, twice).data(), (x + sub.norm->forward(x) * 2.0).data()));
    CHECK(sub.norm->options().variant() == LayerNormVariant::annotated);
    CHECK(SublayerConnection(4, 0.1, LayerNormVariant::pytorch).norm->options().variant() ==
          LayerNormVariant::pytorch);
    std::vector<std::string> keys;
    for (const auto& [n, p] : sub.named_parameters()) keys.push_back(n);
    CHECK(keys == std::vector<std::string>{"norm.a_2", "norm.b_2"});
  }

  TEST_CASE("gradients flow through both the residual path and the sub-layer path") {
    auto gen = std::make_shared<Generator>(2);
    SublayerConnection sub(3, 0.25, LayerNormVariant::annotated, gen);
    Generator data(3);
    Tensor x(randn({2, 3}, &data), true), w(randn({3}, &data), true);
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>&) {
          gen->manual_seed(7);
          return sub.forward(x, [&](const Tensor& n) { return ops::tanh(n * w); });
        },
        {x, w, sub.norm->weight, sub.norm->bias});
    CHECK_MESSAGE(r.ok, r.message);
  }

}  // TEST_SUITE
