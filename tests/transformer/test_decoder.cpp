// tests/transformer/test_decoder.cpp: DecoderLayer and Decoder — keys, masked self-attention, attention
// over memory, clones, gradcheck.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
std::shared_ptr<DecoderLayer> layer(std::int64_t d, double p, std::shared_ptr<Generator> gen) {
  return std::make_shared<DecoderLayer>(d, std::make_shared<MultiHeadedAttention>(2, d, p, gen),
                                        std::make_shared<MultiHeadedAttention>(2, d, p, gen),
                                        std::make_shared<PositionwiseFeedForward>(d, 2 * d, p, gen),
                                        p, LayerNormVariant::annotated, gen);
}
}  // namespace

TEST_SUITE("nn.transformer.decoder") {
  TEST_CASE("a DecoderLayer registers self_attn, src_attn, feed_forward and three sub-layers") {
    Decoder dec(layer(4, 0.1, std::make_shared<Generator>(0)), 2);
    std::vector<std::string> keys;
    for (const auto& [n, p] : dec.named_parameters()) keys.push_back(n);
    CHECK(keys.size() == 2 * (8 + 8 + 4 + 6) + 2);
    CHECK(std::find(keys.begin(), keys.end(), "layers.1.src_attn.linears.3.bias") != keys.end());
    CHECK(std::find(keys.begin(), keys.end(), "layers.0.sublayer.2.norm.b_2") != keys.end());
    CHECK(dec.layers->size() == 2);
  }

  TEST_CASE("under the causal mask an output position does not depend on later target positions") {
    Decoder dec(layer(4, 0.0, std::make_shared<Generator>(1)), 2);
    Generator gen(2);
    Tensor x(randn({1, 3, 4}, &gen)), memory(randn({1, 5, 4}, &gen));
    const Mask causal = ops::subsequent_mask(3);
    const Tensor a = dec.forward(x, memory, std::nullopt, causal);
    Array changed = x.data();
    // Change the last position only, and not by the same amount in every feature: the LayerNorms
    // subtract each position's mean, so a uniform shift would hardly show even where it should.
    for (std::size_t j = 0; j < 4; ++j) changed(0, 2, j) += float(j) - 1.5f;
    const Tensor b = dec.forward(Tensor(changed), memory, std::nullopt, causal);
    for (std::size_t t = 0; t < 2; ++t)
      for (std::size_t j = 0; j < 4; ++j) CHECK(a.data()(0, t, j) == b.data()(0, t, j));
    for (std::size_t j = 0; j < 4; ++j)
      CHECK(std::abs(a.data()(0, 2, j) - b.data()(0, 2, j)) > 1e-3f);
  }

  TEST_CASE("a DecoderLayer is masked self-attention, attention over memory and feed-forward") {
    auto l = layer(4, 0.0, std::make_shared<Generator>(3));
    Generator gen(4);
    Tensor x(randn({2, 3, 4}, &gen)), m(randn({2, 2, 4}, &gen));
    const Mask src = ops::padding_mask(IndexArray{{1, 0}, {1, 1}}, 0),
               tgt = ops::subsequent_mask(3);
    auto norm = [&](int i, const Tensor& t) {
      return l->sublayer->ptr<SublayerConnection>(i)->norm->forward(t);
    };
    Tensor h = x + l->self_attn->forward(norm(0, x), norm(0, x), norm(0, x), tgt);
    h = h + l->src_attn->forward(norm(1, h), m, m, src);
    h = h + l->feed_forward->forward(norm(2, h));
    CHECK(bit_equal(l->forward(x, m, src, tgt).data(), h.data()));
  }

  TEST_CASE("the decoder passes gradcheck for its input, the memory and a sample of parameters") {
    Decoder dec(layer(4, 0.0, std::make_shared<Generator>(5)), 1);
    Generator gen(6);
    Tensor x(randn({1, 3, 4}, &gen), true), m(randn({1, 2, 4}, &gen), true);
    auto l0 = dec.layers->ptr<DecoderLayer>(0);
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>&) {
          return dec.forward(x, m, std::nullopt, ops::subsequent_mask(3));
        },
        {x, m, l0->src_attn->linears->ptr<Linear>(2)->weight,
         l0->self_attn->linears->ptr<Linear>(0)->bias, l0->feed_forward->w_2->weight,
         dec.norm->weight});
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("a Decoder needs a layer and N >= 1") {
    CHECK_THROWS_WITH_AS(Decoder(layer(4, 0.1, nullptr), 0),
                         doctest::Contains("expected N >= 1 layers, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(Decoder(nullptr, 1), doctest::Contains("expected a layer"), ValueError);
  }

}  // TEST_SUITE
