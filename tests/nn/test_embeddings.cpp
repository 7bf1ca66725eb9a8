// tests/nn/test_embeddings.cpp: the scaled Embeddings of the seed tutorials,
// lut(x) * sqrt(d_model): the seed's own example bit for bit, the fused op against
// embedding-then-mul, the scaled gradient, keys, printing; and, with the whole toy model, same
// seed -> same model and save -> load -> same outputs.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "models.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

TEST_SUITE("nn.embeddings") {
  TEST_CASE(
      "the seed's example Embeddings(512, 1000) equals the looked-up rows times 22.627417f bit for "
      "bit") {
    Embeddings emb(512, 1000);
    const IndexArray ids = {{123, 233, 510, 998}, {985, 211, 110, 996}};
    const Tensor y = emb.forward(ids);
    REQUIRE(y.shape() == Shape{2, 4, 512});
    CHECK(emb.scale() == 22.627417f);
    const Array& w = emb.lut->weight.data();
    Array want = Array::from_shape({2, 4, 512});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 4; ++t)
        for (std::size_t j = 0; j < 512; ++j)
          want(b, t, j) = w(static_cast<std::size_t>(ids(b, t)), j) * 22.627417f;
    CHECK(bit_equal(y.data(), want));
  }

  TEST_CASE("the fused lookup is bit-identical to embedding followed by mul") {
    for (std::int64_t d_model : {16, 512, 7}) {
      Embeddings emb(EmbeddingOptions(50, d_model).padding_idx(0), std::make_shared<Generator>(3));
      const IndexArray ids = {{0, 5, 49, 5}, {1, 2, 3, 0}};
      const double s = std::sqrt(double(d_model));
      const Tensor fused = emb.forward(ids);
      const Tensor two_ops =
          ops::mul(ops::embedding(ids, emb.lut->weight, EmbeddingOptions().padding_idx(0)), s);
      CAPTURE(d_model);
      CHECK(bit_equal(fused.data(), two_ops.data()));
    }
  }

  TEST_CASE("the weight's gradient is scaled by the same factor") {
    Embeddings emb(EmbeddingOptions(5, 16).padding_idx(0));
    ops::sum(emb.forward(IndexArray{{1, 2, 1, 0}})).backward();
    const Array& g = emb.lut->weight.grad();
    for (std::size_t j = 0; j < 16; ++j) {
      CHECK(g(0, j) == 0.0f);
      CHECK(g(1, j) == 8.0f);  // twice, times sqrt(16) = 4
      CHECK(g(2, j) == 4.0f);
      CHECK(g(3, j) == 0.0f);
    }
  }

  TEST_CASE("the gradient matches finite differences") {
    Embeddings emb(EmbeddingOptions(6, 4), std::make_shared<Generator>(9));
    const IndexArray ids = {{1, 2, 5}, {5, 0, 3}};  // padding is checked in test_embedding.cpp
    const auto r =
        gradcheck([&](const std::vector<Tensor>&) { return emb.forward(ids); }, {emb.lut->weight});
    CHECK_MESSAGE(r.ok, r);
  }

  TEST_CASE("the tutorial argument order is (d_model, vocab) and options reach the lut") {
    Embeddings emb(8, 100);
    CHECK(emb.lut->weight.shape() == Shape{100, 8});
    CHECK(emb.d_model() == 8);
    Embeddings padded(EmbeddingOptions(11, 16).padding_idx(0).sparse(true));
    CHECK(padded.lut->padding_idx() == 0);
    CHECK(padded.lut->options().sparse());
  }

  TEST_CASE("the state keys of a tutorial-shaped model") {
    testing::TutorialModel model(512, 1000, 5000);
    const StateDict sd = model.state_dict();
    CHECK(sd.keys() == std::vector<std::string>{"src_embed.0.lut.weight", "src_embed.1.pe"});
    CHECK(sd.at("src_embed.0.lut.weight").shape() == Shape{1000, 512});
    CHECK(sd.at("src_embed.1.pe").shape() == Shape{1, 5000, 512});
    std::vector<std::string> params;
    for (const auto& [n, p] : model.named_parameters()) params.push_back(n);
    CHECK(params == std::vector<std::string>{"src_embed.0.lut.weight"});
    CHECK(model.src_embed->ptr<Embeddings>(0)->lut->weight.name() == "src_embed.0.lut.weight");
  }

  TEST_CASE("a nested model prints in PyTorch's layout") {
    testing::TutorialModel model(512, 1000);
    CHECK(model.repr() ==
          "TutorialModel(\n"
          "  (src_embed): ModuleList(\n"
          "    (0): Embeddings(\n"
          "      (lut): Embedding(1000, 512)\n"
          "    )\n"
          "    (1): PositionalEncoding(\n"
          "      (dropout): Dropout(p=0.1, inplace=False)\n"
          "    )\n"
          "  )\n"
          ")");
    testing::TinyLM lm(std::make_shared<Generator>(0));
    CHECK(lm.repr() ==
          "TinyLM(\n"
          "  (embed): Embeddings(\n"
          "    (lut): Embedding(11, 16, padding_idx=0)\n"
          "  )\n"
          "  (pos): PositionalEncoding(\n"
          "    (dropout): Dropout(p=0.1, inplace=False)\n"
          "  )\n"
          "  (out): Linear(in_features=16, out_features=11, bias=True)\n"
          ")");
  }

  TEST_CASE("one seeded generator makes the whole model: same seed, same model bit for bit") {
    testing::TinyLM a(std::make_shared<Generator>(2024)), b(std::make_shared<Generator>(2024)),
        c(std::make_shared<Generator>(2025));
    CHECK(diff_state_dicts(a.state_dict(), b.state_dict()).identical());
    CHECK_FALSE(diff_state_dicts(a.state_dict(), c.state_dict()).identical());
    const IndexArray ids = {{1, 2, 3, 0}, {4, 5, 0, 0}};
    CHECK(
        bit_equal(a.forward(ids).data(), b.forward(ids).data()));  // training mode: same masks too
  }

  TEST_CASE(
      "a model saved and loaded into a fresh one made with another seed gives identical outputs") {
    testing::TinyLM trained(std::make_shared<Generator>(1));
    {
      autograd::NoGradGuard no_grad;  // make it differ from any fresh init
      trained.out->bias.mutable_data().fill(0.25f);
    }
    const StateDict saved = trained.state_dict();
    testing::TinyLM fresh(std::make_shared<Generator>(777));
    const IndexArray ids = {{1, 2, 3, 4, 0}, {5, 6, 7, 0, 0}};
    trained.eval();
    fresh.eval();
    autograd::NoGradGuard no_grad;
    CHECK_FALSE(bit_equal(trained.forward(ids).data(), fresh.forward(ids).data()));
    CHECK(fresh.load_state_dict(saved).to_string() == "<All keys matched successfully>");
    CHECK(bit_equal(trained.forward(ids).data(), fresh.forward(ids).data()));
    CHECK(bit_equal(trained.forward(ids).data(),
                    trained.forward(ids).data()));  // eval is deterministic
    CHECK(diff_state_dicts(saved, fresh.state_dict()).identical());
    CHECK_NOTHROW(fresh.pos->verify());
  }

  TEST_CASE("printing") {
    CHECK(Embeddings(16, 11).repr() == "Embeddings(\n  (lut): Embedding(11, 16)\n)");
  }
}  // TEST_SUITE
