// tests/nn/test_loss.cpp: the CrossEntropyLoss module — options reach ops::cross_entropy,
// errors name the module, printing. The loss's values and gradients are tested in
// tests/ops/test_loss.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;

TEST_SUITE("nn.loss") {
  TEST_CASE("CrossEntropyLoss is ops::cross_entropy with the module's options") {
    Generator g(1);
    const Tensor logits(randn({5, 4}, &g), true);
    const IndexArray target = {1, 0, 3, 0, 2};
    for (const char* reduction : {"mean", "sum", "none"}) {
      const auto options = CrossEntropyLossOptions().ignore_index(0).reduction(reduction);
      CrossEntropyLoss loss(options);
      CHECK(all_close(loss.forward(logits, target).data(),
                      ops::cross_entropy(logits, target, options).data(), 0, 0));
    }
  }

  TEST_CASE("the gradient matches finite differences") {
    Generator g(2);
    const Tensor logits(randn({4, 3}, &g), true);
    const IndexArray target = {2, 0, 1, 1};
    CrossEntropyLoss loss;
    const auto r = gradcheck(
        [&](const std::vector<Tensor>& t) { return loss.forward(t[0], target); }, {logits});
    CHECK_MESSAGE(r.ok, r);
  }

  TEST_CASE("a bad reduction is refused at construction") {
    CHECK_THROWS_WITH_AS(CrossEntropyLoss(CrossEntropyLossOptions().reduction("avg")),
                         doctest::Contains("avg is not a valid value for reduction"), ValueError);
  }

  TEST_CASE("an out-of-range target names the module") {
    struct Model : Module {
      Model() : criterion(register_module("criterion", std::make_shared<CrossEntropyLoss>())) {}
      std::shared_ptr<CrossEntropyLoss> criterion;
    };
    Model m;
    CHECK_THROWS_WITH_AS(m.criterion->forward(Tensor(xt::zeros<float>({2, 3})), IndexArray{0, 7}),
                         doctest::Contains("CrossEntropyLoss 'criterion'"), IndexError);
  }

  TEST_CASE("printing") { CHECK(CrossEntropyLoss().repr() == "CrossEntropyLoss()"); }
}  // TEST_SUITE
