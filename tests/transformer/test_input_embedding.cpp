// tests/transformer/test_input_embedding.cpp: Sequential(Embeddings, PositionalEncoding) with the
// tutorial's keys and a typed forward.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.transformer.input_embedding") {
  TEST_CASE(
      "the children are '0' and '1', so the keys read src_embed.0.lut.weight and src_embed.1.pe") {
    InputEmbedding emb(std::make_shared<Embeddings>(8, 11),
                       std::make_shared<PositionalEncoding>(8, 0.1, 50));
    const StateDict sd = emb.state_dict();
    CHECK(sd.keys() == std::vector<std::string>{"0.lut.weight", "1.pe"});
    CHECK(emb.type_name() == "Sequential");
    CHECK(emb.parameters().size() == 1);  // pe is a buffer
  }

  TEST_CASE("forward scales the looked-up rows and adds the positions") {
    InputEmbedding emb(std::make_shared<Embeddings>(4, 6, std::make_shared<Generator>(1)),
                       std::make_shared<PositionalEncoding>(4, 0.1, 20));
    emb.eval();
    const IndexArray ids = {{1, 5, 2}};
    CHECK(bit_equal(emb.forward(ids).data(),
                    emb.position->forward(emb.embeddings->forward(ids)).data()));
    const GradcheckResult r =
        gradcheck([&](const std::vector<Tensor>&) { return emb.forward(ids); },
                  {emb.embeddings->lut->weight});
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("the two children must agree on d_model") {
    CHECK_THROWS_WITH_AS(InputEmbedding(std::make_shared<Embeddings>(8, 11),
                                        std::make_shared<PositionalEncoding>(6, 0.1)),
                         doctest::Contains("expected the same d_model"), ShapeError);
  }

}  // TEST_SUITE
