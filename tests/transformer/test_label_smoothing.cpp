// tests/transformer/test_label_smoothing.cpp: the tutorial's LabelSmoothing — the smoothed target, the
// zeroed padding column and rows, PyTorch goldens, gradcheck, validation.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::nn::transformer;
using tapegrad::testing::all_close;
using tapegrad::testing::values;

namespace {
// scripts/golden/transformer_layers.py, PyTorch 1.13: LabelSmoothing(5, 0, 0.4) on
// log_softmax(LOGITS) with targets [2, 1, 0, 3].
const Array LOGITS = {{0.5f, -1.25f, 2.0f, 0.0f, 1.5f},
                      {-0.75f, 0.25f, 3.0f, -2.0f, 0.125f},
                      {1.0f, 1.0f, -0.5f, 2.5f, -1.5f},
                      {0.0f, 4.0f, -3.0f, 1.25f, 0.75f}};
}  // namespace

TEST_SUITE("nn.transformer.label_smoothing") {
  TEST_CASE("the target distribution, its loss and gradient match the tutorial's in PyTorch") {
    LabelSmoothing crit(5, 0, 0.4);
    Tensor x(ops::log_softmax(Tensor(LOGITS)).data(), true);
    Tensor loss = crit.forward(x, IndexArray{2, 1, 0, 3});
    const float s = 0.13333334f, c = 0.600000024f;
    CHECK(all_close(crit.true_dist,
                    values({4, 5}, {0, s, c, s, s, 0, c, s, s, s, 0, 0, 0, 0, 0, 0, s, s, c, s}),
                    1e-7));
    CHECK(loss.item() == doctest::Approx(4.09632778f).epsilon(1e-6));
    loss.backward();
    CHECK(all_close(x.grad(), Array(-crit.true_dist), 1e-7));
  }

  TEST_CASE(
      "without smoothing the loss is the summed negative log-likelihood of non-padding targets") {
    LabelSmoothing crit(4, 0, 0.0);
    Tensor x(
        Array{{-1.f, -2.f, -3.f, -4.f}, {-0.5f, -0.25f, -2.f, -1.f}, {-9.f, -9.f, -9.f, -9.f}});
    CHECK(crit.forward(x, IndexArray{3, 1, 0}).item() == doctest::Approx(4.25));
  }

  TEST_CASE("label smoothing passes gradcheck") {
    LabelSmoothing crit(6, 0, 0.2);
    Generator gen(1);
    Tensor x(randn({4, 6}, &gen), true);
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>& t) {
          return crit.forward(ops::log_softmax(t[0]), IndexArray{1, 0, 5, 2});
        },
        {x});
    CHECK_MESSAGE(r.ok, r.message);
  }

  TEST_CASE("bad sizes, shapes and targets are reported") {
    CHECK_THROWS_WITH_AS(LabelSmoothing(5, 5),
                         doctest::Contains("expected padding_idx in [0, 5), got 5"), ValueError);
    CHECK_THROWS_WITH_AS(LabelSmoothing(5, 0, 1.5),
                         doctest::Contains("expected smoothing in [0, 1]"), ValueError);
    CHECK_THROWS_WITH_AS(LabelSmoothing(2, 0, 0.1), doctest::Contains("expected size >= 3"),
                         ValueError);
    LabelSmoothing crit(5, 0, 0.1);
    CHECK_THROWS_WITH_AS(crit.forward(Tensor(xt::zeros<float>({2, 4})), IndexArray{1, 2}),
                         doctest::Contains("expected x of shape (N, 5), got (2, 4)"), ShapeError);
    CHECK_THROWS_WITH_AS(crit.forward(Tensor(xt::zeros<float>({2, 5})), IndexArray{1, 2, 3}),
                         doctest::Contains("expected target of shape (2,)"), ShapeError);
    CHECK_THROWS_WITH_AS(crit.forward(Tensor(xt::zeros<float>({2, 5})), IndexArray{1, 7}),
                         doctest::Contains("index 7 is out of bounds for dimension 1 with size 5"),
                         IndexError);
    CHECK(crit.repr() == "LabelSmoothing(size=5, padding_idx=0, smoothing=0.1)");
  }

}  // TEST_SUITE
