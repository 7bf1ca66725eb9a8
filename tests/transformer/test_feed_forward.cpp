// tests/transformer/test_feed_forward.cpp: PositionwiseFeedForward — names, w_2(dropout(relu(w_1 x))),
// gradcheck, clone.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.transformer.feed_forward") {
  TEST_CASE("w_1 widens to d_ff, w_2 narrows back, with ReLU between") {
    PositionwiseFeedForward ff(4, 6, 0.1, std::make_shared<Generator>(1));
    std::vector<std::string> keys;
    for (const auto& [n, p] : ff.named_parameters()) keys.push_back(n);
    CHECK(keys == std::vector<std::string>{"w_1.weight", "w_1.bias", "w_2.weight", "w_2.bias"});
    CHECK(ff.w_1->weight.shape() == Shape{6, 4});
    CHECK(ff.w_2->weight.shape() == Shape{4, 6});
    Generator gen(2);
    Tensor x(randn({2, 3, 4}, &gen));
    ff.eval();  // no dropout
    CHECK(bit_equal(ff.forward(x).data(), ff.w_2->forward(ops::relu(ff.w_1->forward(x))).data()));
  }

  TEST_CASE("the feed-forward passes gradcheck for its input and parameters, dropout included") {
    auto gen = std::make_shared<Generator>(3);
    PositionwiseFeedForward ff(3, 5, 0.2, gen);
    Generator data(4);
    Tensor x(randn({2, 3}, &data), true);
    std::vector<Tensor> inputs{x};
    for (const Parameter& p : ff.parameters()) inputs.push_back(p);
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>&) {
          gen->manual_seed(11);  // the same dropout mask at every evaluation
          return ff.forward(x);
        },
        inputs);
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("clone copies sizes, values and mode into new parameters") {
    PositionwiseFeedForward ff(4, 6, 0.1, std::make_shared<Generator>(5));
    ff.eval();
    auto copy = ff.clone();
    CHECK(bit_equal(copy->w_2->weight.data(), ff.w_2->weight.data()));
    CHECK_FALSE(copy->w_2->weight.is_same(ff.w_2->weight));
    CHECK_FALSE(copy->is_training());
    CHECK(copy->dropout->options().p() == 0.1);
  }

}  // TEST_SUITE
