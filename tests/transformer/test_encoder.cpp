// tests/transformer/test_encoder.cpp: EncoderLayer and Encoder — the tutorial's keys, N clones that start
// equal and train apart, forward as the two sub-layers, gradcheck, validation.
#include <doctest/doctest.h>

#include <algorithm>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;

namespace {
std::shared_ptr<EncoderLayer> layer(std::int64_t d, std::int64_t d_ff, double p,
                                    std::shared_ptr<Generator> gen) {
  return std::make_shared<EncoderLayer>(d, std::make_shared<MultiHeadedAttention>(2, d, p, gen),
                                        std::make_shared<PositionwiseFeedForward>(d, d_ff, p, gen),
                                        p, LayerNormVariant::annotated, gen);
}
}  // namespace

TEST_SUITE("nn.transformer.encoder") {
  TEST_CASE("an Encoder of N layers registers layers.0 .. layers.N-1 and a final norm") {
    Encoder enc(layer(4, 8, 0.1, std::make_shared<Generator>(0)), 2);
    std::vector<std::string> keys;
    for (const auto& [n, p] : enc.named_parameters()) keys.push_back(n);
    CHECK(keys.size() == 2 * (8 + 4 + 4) + 2);
    CHECK(keys.front() == "layers.0.self_attn.linears.0.weight");
    CHECK(std::find(keys.begin(), keys.end(), "layers.0.sublayer.1.norm.a_2") != keys.end());
    CHECK(std::find(keys.begin(), keys.end(), "layers.1.feed_forward.w_2.bias") != keys.end());
    CHECK(keys.back() == "norm.b_2");
  }

  TEST_CASE("the clones start as copies of the first layer and do not share storage") {
    Encoder enc(layer(4, 8, 0.1, std::make_shared<Generator>(1)), 3);
    const StateDict first = enc.layers->ptr<EncoderLayer>(0)->state_dict();
    for (std::int64_t i = 1; i < 3; ++i) {
      const StateDict other = enc.layers->ptr<EncoderLayer>(i)->state_dict();
      for (const auto& [key, value] : first) CHECK(bit_equal(other.at(key), value));
    }
    CHECK_FALSE(
        enc.layers->ptr<EncoderLayer>(1)->self_attn->linears->ptr<Linear>(0)->weight.is_same(
            enc.layers->ptr<EncoderLayer>(0)->self_attn->linears->ptr<Linear>(0)->weight));
  }

  TEST_CASE("an EncoderLayer is self-attention then feed-forward, each in a pre-norm residual") {
    auto l = layer(4, 8, 0.0, std::make_shared<Generator>(2));
    Generator gen(3);
    Tensor x(randn({2, 3, 4}, &gen));
    const Mask keep = ops::padding_mask(IndexArray{{1, 1, 0}, {1, 1, 1}}, 0);
    Tensor h =
        x + l->self_attn->forward(l->sublayer->ptr<SublayerConnection>(0)->norm->forward(x),
                                  l->sublayer->ptr<SublayerConnection>(0)->norm->forward(x),
                                  l->sublayer->ptr<SublayerConnection>(0)->norm->forward(x), keep);
    Tensor expected =
        h + l->feed_forward->forward(l->sublayer->ptr<SublayerConnection>(1)->norm->forward(h));
    CHECK(bit_equal(l->forward(x, keep).data(), expected.data()));
  }

  TEST_CASE("the encoder passes gradcheck for its input and a sample of parameters") {
    Encoder enc(layer(4, 6, 0.0, std::make_shared<Generator>(4)), 2);
    Generator gen(5);
    Tensor x(randn({1, 3, 4}, &gen), true);
    const Mask keep = ops::padding_mask(IndexArray{{1, 2, 0}}, 0);
    auto l1 = enc.layers->ptr<EncoderLayer>(1);
    const GradcheckResult r =
        gradcheck([&](const std::vector<Tensor>&) { return enc.forward(x, keep); },
                  {x, l1->self_attn->linears->ptr<Linear>(1)->weight, l1->feed_forward->w_1->bias,
                   l1->sublayer->ptr<SublayerConnection>(0)->norm->weight, enc.norm->bias});
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("an Encoder needs a layer and N >= 1") {
    CHECK_THROWS_WITH_AS(Encoder(layer(4, 8, 0.1, nullptr), 0),
                         doctest::Contains("expected N >= 1 layers, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(Encoder(nullptr, 2), doctest::Contains("expected a layer"), ValueError);
  }

}  // TEST_SUITE
