// tests/transformer/test_transformer.cpp: make_model and EncoderDecoder — structure and keys, Xavier
// initialisation (and the re-zeroed padding row), seeds, shapes, a gradcheck through the model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;

namespace {
std::shared_ptr<EncoderDecoder> small(std::uint64_t seed, double dropout = 0.1) {
  return make_model(7, 9, TransformerOptions().N(2).d_model(8).d_ff(16).h(2).dropout(dropout),
                    std::make_shared<Generator>(seed));
}
}  // namespace

TEST_SUITE("nn.transformer.transformer") {
  TEST_CASE("make_model builds the tutorial's tree, with its state-dict keys") {
    auto model = small(0);
    const std::vector<std::string> keys = model->state_dict().keys();
    CHECK(keys.front() == "encoder.layers.0.self_attn.linears.0.weight");
    CHECK(keys.back() == "generator.proj.bias");
    for (const char* key :
         {"encoder.layers.1.sublayer.1.norm.a_2", "encoder.norm.b_2",
          "decoder.layers.1.src_attn.linears.2.bias", "decoder.layers.0.sublayer.2.norm.a_2",
          "src_embed.0.lut.weight", "src_embed.1.pe", "tgt_embed.0.lut.weight", "tgt_embed.1.pe"})
      CHECK_MESSAGE(std::find(keys.begin(), keys.end(), key) != keys.end(), key);
    CHECK(model->src_embed->embeddings->lut->weight.shape() == Shape{7, 8});
    CHECK(model->tgt_embed->embeddings->lut->weight.shape() == Shape{9, 8});
    CHECK(model->generator->proj->weight.shape() == Shape{9, 8});
    CHECK(model->repr().rfind("EncoderDecoder(\n  (encoder): Encoder(\n    (layers): ModuleList(",
                              0) == 0);
  }

  TEST_CASE(
      "every matrix is Xavier-uniform, biases keep Linear's init, norms start at one and zero") {
    auto model = small(1);
    for (const auto& [name, p] : model->named_parameters()) {
      CAPTURE(name);
      if (p.dim() == 2) {
        const double bound = std::sqrt(6.0 / double(p.shape()[0] + p.shape()[1]));
        for (float v : p.data()) REQUIRE(std::abs(v) <= bound);
      } else if (name.size() > 3 && name.substr(name.size() - 3) == "a_2") {
        CHECK(bit_equal(p.data(), xt::ones<float>(p.shape())));
      } else if (name.size() > 3 && name.substr(name.size() - 3) == "b_2") {
        CHECK(bit_equal(p.data(), xt::zeros<float>(p.shape())));
      }
    }
    // the layers are clones: 1-D parameters start equal, matrices are drawn again by Xavier
    auto l0 = model->encoder->layers->ptr<EncoderLayer>(0),
         l1 = model->encoder->layers->ptr<EncoderLayer>(1);
    CHECK(bit_equal(l0->feed_forward->w_1->bias.data(), l1->feed_forward->w_1->bias.data()));
    CHECK_FALSE(
        bit_equal(l0->feed_forward->w_1->weight.data(), l1->feed_forward->w_1->weight.data()));
  }

  TEST_CASE("Xavier initialisation of a model re-zeroes the padding rows it overwrote") {
    struct Model : Module {
      Model()
          : emb(register_module(
                "emb", std::make_shared<Embedding>(EmbeddingOptions(5, 3).padding_idx(0)))),
            out(register_module("out", std::make_shared<Linear>(3, 2))) {}
      std::shared_ptr<Embedding> emb;
      std::shared_ptr<Linear> out;
    } model;
    Generator gen(2);
    CHECK(init::xavier_uniform_parameters_(model, &gen) == 2);
    for (std::size_t j = 0; j < 3; ++j) CHECK(model.emb->weight.data()(0, j) == 0.f);
    CHECK(model.emb->weight.data()(1, 0) != 0.f);
  }

  TEST_CASE("the same seed builds the same model, another seed another one") {
    const StateDict a = small(3)->state_dict(), b = small(3)->state_dict(),
                    c = small(4)->state_dict();
    for (const auto& [key, value] : a) CHECK(bit_equal(value, b.at(key)));
    CHECK_FALSE(bit_equal(a.at("encoder.layers.0.self_attn.linears.0.weight"),
                          c.at("encoder.layers.0.self_attn.linears.0.weight")));
  }

  TEST_CASE("forward gives (B, Tt, d_model) and gradients reach every parameter") {
    auto model = small(5);
    const IndexArray src = {{1, 2, 3, 0}, {1, 4, 4, 4}}, tgt = {{1, 2, 3}, {1, 8, 0}};
    const Tensor out =
        model->forward(src, tgt, ops::padding_mask(src, 0), ops::target_mask(tgt, 0));
    CHECK(out.shape() == Shape{2, 3, 8});
    ops::sum(model->generator->forward(out)).backward();
    for (const auto& [name, p] : model->named_parameters()) CHECK_MESSAGE(p.has_grad(), name);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("the whole model passes gradcheck for a sample of its parameters") {
    auto model = make_model(5, 5, TransformerOptions().N(1).d_model(4).d_ff(6).h(2).dropout(0.0),
                            std::make_shared<Generator>(6));
    const IndexArray src = {{1, 2, 3}}, tgt = {{1, 4}};
    auto loss = [&](const std::vector<Tensor>&) {
      const Tensor out =
          model->forward(src, tgt, ops::padding_mask(src, 0), ops::target_mask(tgt, 0));
      return model->generator->forward(out);
    };
    auto dl = model->decoder->layers->ptr<DecoderLayer>(0);
    const GradcheckResult r =
        gradcheck(loss, {model->src_embed->embeddings->lut->weight, model->encoder->norm->weight,
                         dl->src_attn->linears->ptr<Linear>(1)->weight, dl->feed_forward->w_1->bias,
                         model->generator->proj->weight});
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("make_model refuses sizes that do not fit") {
    CHECK_THROWS_WITH_AS(make_model(5, 5, TransformerOptions().d_model(10).h(3)),
                         doctest::Contains("dividing d_model"), ValueError);
    CHECK_THROWS_WITH_AS(make_model(5, 5, TransformerOptions().N(0).d_model(8).d_ff(8).h(2)),
                         doctest::Contains("expected N >= 1"), ValueError);
  }

}  // TEST_SUITE
