// tests/nn/test_tied_linear.cpp: a Linear whose weight belongs to another module (weight tying):
// one Parameter under two names, one gradient that both uses add into, stored once.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

namespace {
// An embedding and an output projection sharing its table, the way GPT-2 ties them.
struct Tied : nn::Module {
  Tied()
      : embed(register_module("embed",
                              std::make_shared<nn::Embedding>(nn::EmbeddingOptions(5, 3),
                                                              std::make_shared<Generator>(0)))),
        head(register_module("head", std::make_shared<nn::TiedLinear>(embed->weight))) {}
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::TiedLinear> head;
};
}  // namespace

TEST_SUITE("nn.tied_linear") {
  TEST_CASE("the weight is the other module's parameter: listed once, an alias in the state dict") {
    Tied m;
    CHECK(m.head->weight.is_same(m.embed->weight));
    const auto named = m.named_parameters();
    REQUIRE(named.size() == 1);
    CHECK(named[0].first == "embed.weight");
    const nn::StateDict sd = m.state_dict();
    CHECK(sd.keys() == std::vector<std::string>{"embed.weight", "head.weight"});
    CHECK(sd.aliases() ==
          std::vector<std::pair<std::string, std::string>>{{"head.weight", "embed.weight"}});
    CHECK(m.head->repr() == "TiedLinear(in_features=3, out_features=5, bias=False)");
  }

  TEST_CASE("both uses add into the one gradient") {
    Tied m;
    const IndexArray ids = {0, 3};
    Tensor loss = ops::sum(m.head->forward(m.embed->forward(ids)));
    loss.backward();
    // d/dW of sum(E[ids] W^T) = (rows ids of the lookup's share) + (the head's share: sum of inputs per output)
    const Array w = m.embed->weight.data();
    Array expected = xt::zeros<float>({5, 3});
    for (std::size_t k = 0; k < 5; ++k)
      for (std::size_t j = 0; j < 3; ++j) expected(k, j) = w(0, j) + w(3, j);  // dW from the head
    for (std::int64_t id : ids)
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t k = 0; k < 5; ++k)
          expected(std::size_t(id), j) += w(k, j);  // dE from the lookup
    CHECK(all_close(m.embed->weight.grad(), expected, 1e-6, 1e-5));
  }

  TEST_CASE("a weight that is not a matrix is refused, and a bias starts at zero") {
    CHECK_THROWS_WITH_AS(
        nn::TiedLinear(Parameter(Array{1.0f, 2.0f})),
        doctest::Contains("expected a weight of shape (out_features, in_features), got (2,)"),
        ShapeError);
    nn::TiedLinear with_bias(Parameter(xt::ones<float>({4, 2})), true);
    CHECK(testing::bit_equal(with_bias.bias.data(), xt::zeros<float>({4})));
    CHECK(with_bias.forward(Tensor(xt::ones<float>({1, 2}))).data()(0, 3) == 2.0f);
  }

}  // TEST_SUITE
