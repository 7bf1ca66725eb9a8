// tests/transformer/test_attention.cpp: MultiHeadedAttention — the tutorial's names, forward as
// projections + fused attention + output projection, gradcheck through every parameter, masks,
// dropout and eval, clone, validation.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.transformer.attention") {
  TEST_CASE("four linears in 'linears' and a 'dropout', as the tutorial registers them") {
    MultiHeadedAttention mha(2, 8, 0.1, std::make_shared<Generator>(0));
    std::vector<std::string> keys;
    for (const auto& [n, p] : mha.named_parameters()) keys.push_back(n);
    CHECK(keys == std::vector<std::string>{"linears.0.weight", "linears.0.bias", "linears.1.weight",
                                           "linears.1.bias", "linears.2.weight", "linears.2.bias",
                                           "linears.3.weight", "linears.3.bias"});
    CHECK(mha.d_k() == 4);
    CHECK(mha.repr() ==
          "MultiHeadedAttention(\n  (linears): ModuleList(\n    (0-3): 4 x Linear(in_features=8, "
          "out_features=8, bias=True)\n  )\n  (dropout): Dropout(p=0.1, inplace=False)\n)");
  }

  TEST_CASE("forward projects q, k and v, attends head by head and projects the result") {
    Generator gen(3);
    MultiHeadedAttention mha(2, 4, 0.0, std::make_shared<Generator>(5));
    Tensor q(randn({2, 3, 4}, &gen)), kv(randn({2, 5, 4}, &gen));
    const Mask keep = ops::padding_mask(IndexArray{{1, 2, 3, 0, 0}, {4, 5, 6, 7, 8}}, 0);
    const Tensor y = mha.forward(q, kv, kv, keep);
    const Tensor expected = mha.linears->ptr<Linear>(3)->forward(ops::scaled_dot_product_attention(
        mha.linears->ptr<Linear>(0)->forward(q), mha.linears->ptr<Linear>(1)->forward(kv),
        mha.linears->ptr<Linear>(2)->forward(kv), keep, AttentionOptions().heads(2)));
    CHECK(bit_equal(y.data(), expected.data()));
    CHECK(mha.attn.shape() == Shape{2, 2, 3, 5});
    CHECK(mha.attn(0, 1, 2, 3) == 0.f);  // a padded key gets no weight
  }

  TEST_CASE("gradients reach the inputs and all four projections, and match finite differences") {
    Generator gen(4);
    MultiHeadedAttention mha(2, 4, 0.0, std::make_shared<Generator>(6));
    Tensor x(randn({1, 3, 4}, &gen), true), m(randn({1, 2, 4}, &gen), true);
    std::vector<Tensor> inputs{x, m};
    for (const Parameter& p : mha.parameters()) inputs.push_back(p);
    const GradcheckResult r =
        gradcheck([&](const std::vector<Tensor>&) { return mha.forward(x, m, m); }, inputs);
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE(
      "dropout on the weights acts in training mode only, and clone copies values, not storage") {
    Generator gen(8);
    MultiHeadedAttention mha(1, 4, 0.5, std::make_shared<Generator>(9));
    Tensor x(randn({1, 4, 4}, &gen));
    mha.forward(x, x, x);
    bool some_dropped = false;
    for (float w : mha.attn) some_dropped = some_dropped || w == 0.f;
    CHECK(some_dropped);
    mha.eval();
    const Tensor a = mha.forward(x, x, x);
    for (std::size_t r = 0; r < 4; ++r) {
      float s = 0.f;
      for (std::size_t c = 0; c < 4; ++c) s += mha.attn(0, 0, r, c);
      CHECK(s == doctest::Approx(1.f));
    }
    auto copy = mha.clone();
    CHECK_FALSE(copy->is_training());
    CHECK(bit_equal(copy->forward(x, x, x).data(), a.data()));
    CHECK_FALSE(copy->linears->ptr<Linear>(0)->weight.is_same(mha.linears->ptr<Linear>(0)->weight));
  }

  TEST_CASE("h must divide d_model") {
    CHECK_THROWS_WITH_AS(MultiHeadedAttention(3, 8),
                         doctest::Contains("expected heads h >= 1 dividing d_model, got h = 3"),
                         ValueError);
    CHECK_THROWS_WITH_AS(MultiHeadedAttention(0, 8), doctest::Contains("got h = 0"), ValueError);
  }

}  // TEST_SUITE
