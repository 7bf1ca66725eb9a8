// tests/ops/test_loss.cpp: cross_entropy (PyTorch's CrossEntropyLoss) — values, ignore_index, each
// reduction, PyTorch goldens, gradients, errors.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::check_gradients;
using tapegrad::testing::input;
using tapegrad::testing::values;

namespace {
ops::CrossEntropyOptions reduction(const char* r) {
  return ops::CrossEntropyOptions().reduction(r);
}

// Golden values: scripts/golden/loss.py, PyTorch 1.13 (Debian python3-torch).
const Array LOGITS = {{0.5f, -1.25f, 2.0f, 0.0f, 1.5f},
                      {-0.75f, 0.25f, 3.0f, -2.0f, 0.125f},
                      {1.0f, 1.0f, -0.5f, 2.5f, -1.5f},
                      {0.0f, 4.0f, -3.0f, 1.25f, 0.75f}};
const IndexArray TARGET = {2, -100, 4, 1};
const Array W = {1.0f, 2.0f, -0.5f, 3.0f};  // "none" backpropagates sum(loss * W)
}  // namespace

TEST_SUITE("ops.loss") {
  TEST_CASE("equal logits give log(C) and the gradient is (softmax - onehot) / N") {
    Tensor x(Array{{0.f, 0.f}, {0.f, 0.f}}, true);
    Tensor loss = ops::cross_entropy(x, IndexArray{0, 1});
    CHECK(loss.shape() == Shape{});
    CHECK(loss.item() == doctest::Approx(std::log(2.0)));
    loss.backward();
    CHECK(all_close(x.grad(), Array{{-0.25f, 0.25f}, {0.25f, -0.25f}}));
  }

  TEST_CASE(
      "matches PyTorch for each reduction, with one target ignored (scripts/golden/loss.py, torch "
      "1.13)") {
    SUBCASE("mean: over the 3 kept rows") {
      Tensor x(LOGITS, true);
      Tensor loss = ops::cross_entropy(x, TARGET);
      CHECK(loss.item() == doctest::Approx(1.74169195f).epsilon(1e-6));
      loss.backward();
      CHECK(all_close(x.grad(),
                      values({4, 5}, {0.0371183828f,
                                      0.00645020744f,
                                      -0.166980267f,
                                      0.022513438f,
                                      0.100898236f,
                                      0.f,
                                      0.f,
                                      0.f,
                                      0.f,
                                      0.f,
                                      0.0491141938f,
                                      0.0491141938f,
                                      0.0109588578f,
                                      0.220114559f,
                                      -0.329301804f,
                                      0.00544170663f,
                                      -0.0362261757f,
                                      0.000270926626f,
                                      0.0189934261f,
                                      0.0115200952f}),
                      1e-7, 1e-5));
    }
    SUBCASE("sum") {
      Tensor x(LOGITS, true);
      Tensor loss = ops::cross_entropy(x, TARGET, reduction("sum"));
      CHECK(loss.item() == doctest::Approx(5.22507572f).epsilon(1e-6));
      loss.backward();
      CHECK(all_close(x.grad(), values({4, 5}, {0.111355141f,  0.0193506218f, -0.5009408f,
                                                0.0675403103f, 0.302694708f,  0.f,
                                                0.f,           0.f,           0.f,
                                                0.f,           0.147342578f,  0.147342578f,
                                                0.0328765735f, 0.660343647f,  -0.987905383f,
                                                0.0163251199f, -0.10867852f,  0.000812779821f,
                                                0.0569802783f, 0.0345602855f}),
                      1e-7, 1e-5));
    }
    SUBCASE("none: one loss per row, 0 for the ignored row") {
      Tensor x(LOGITS, true);
      Tensor loss = ops::cross_entropy(x, TARGET, reduction("none"));
      CHECK(all_close(loss.data(), Array{0.69503057f, 0.f, 4.41499472f, 0.1150501f}, 1e-7, 1e-6));
      ops::sum(ops::mul(loss, Tensor(W))).backward();
      CHECK(all_close(x.grad(),
                      values({4, 5}, {0.111355141f,
                                      0.0193506218f,
                                      -0.5009408f,
                                      0.0675403103f,
                                      0.302694708f,
                                      0.f,
                                      0.f,
                                      0.f,
                                      0.f,
                                      0.f,
                                      -0.0736712888f,
                                      -0.0736712888f,
                                      -0.0164382868f,
                                      -0.330171824f,
                                      0.493952692f,
                                      0.0489753596f,
                                      -0.326035559f,
                                      0.0024383394f,
                                      0.170940831f,
                                      0.103680857f}),
                      1e-7, 1e-5));
    }
  }

  TEST_CASE("cross_entropy equals the mean of -log_softmax at the targets") {
    Tensor x = input({3, 4}, 1);
    autograd::NoGradGuard no_grad;
    const IndexArray t = {3, 0, 2};
    Tensor logp = ops::log_softmax(x);
    const double expected = -(logp.data()(0, 3) + logp.data()(1, 0) + logp.data()(2, 2)) / 3.0;
    CHECK(ops::cross_entropy(x, t).item() == doctest::Approx(expected).epsilon(1e-6));
  }

  TEST_CASE(
      "a custom ignore_index is skipped and not counted, and all ignored gives NaN with zero "
      "gradient") {
    Tensor x(Array{{0.f, 0.f}, {5.f, -5.f}, {0.f, 0.f}}, true);
    Tensor loss =
        ops::cross_entropy(x, IndexArray{1, 0, 1}, ops::CrossEntropyOptions().ignore_index(0));
    CHECK(loss.item() == doctest::Approx(std::log(2.0)));  // mean over the 2 kept rows
    loss.backward();
    CHECK(all_close(x.grad(), Array{{0.25f, -0.25f}, {0.f, 0.f}, {0.25f, -0.25f}}));
    x.zero_grad();
    Tensor none_kept = ops::cross_entropy(x, IndexArray{-100, -100, -100});
    CHECK(std::isnan(none_kept.item()));
    none_kept.backward();
    CHECK(all_close(x.grad(), xt::zeros<float>({3, 2})));
    autograd::NoGradGuard no_grad;
    CHECK(ops::cross_entropy(x, IndexArray{-100, -100, -100}, reduction("sum")).item() == 0.f);
  }

  TEST_CASE("huge logits stay finite") {
    Tensor x(Array{{1000.f, 0.f}, {0.f, 1000.f}}, true);
    Tensor loss = ops::cross_entropy(x, IndexArray{0, 0}, reduction("none"));
    CHECK(all_close(loss.data(), Array{0.f, 1000.f}));
    ops::sum(loss).backward();
    CHECK(all_close(x.grad(), Array{{0.f, 0.f}, {-1.f, 1.f}}));
  }

  TEST_CASE("cross_entropy passes gradcheck for each reduction, with an ignored row") {
    Tensor x = input({4, 5}, 2);
    const IndexArray t = {4, -100, 0, 2};
    for (const char* r : {"mean", "sum", "none"}) {
      CAPTURE(r);
      check_gradients(
          [&t, r](const std::vector<Tensor>& v) {
            return ops::cross_entropy(v[0], t, reduction(r));
          },
          {x});
    }
    const IndexArray with_pad = {1, 0, 3, 0};
    check_gradients(
        [&with_pad](const std::vector<Tensor>& v) {
          return ops::cross_entropy(v[0], with_pad, ops::CrossEntropyOptions().ignore_index(0));
        },
        {x});
  }

  TEST_CASE(
      "a target out of range is an IndexError naming the target, the range and the position") {
    Tensor x(Array::from_shape({8, 11}));
    x.mutable_data().fill(0.f);
    CHECK_THROWS_WITH_AS(
        ops::cross_entropy(x, IndexArray{0, 1, 2, 3, 4, 5, 6, 12}),
        doctest::Contains("Target 12 is out of bounds. | cross_entropy: expected targets in [0, "
                          "11) or ignore_index -100, got 12 at position 7"),
        IndexError);
    CHECK_THROWS_WITH_AS(ops::cross_entropy(x, IndexArray{0, -1, 0, 0, 0, 0, 0, 0}),
                         doctest::Contains("got -1 at position 1"), IndexError);
    CHECK_THROWS_AS(ops::cross_entropy(x, IndexArray{0, 0, 0, 0, 0, 0, 0, -100},
                                       ops::CrossEntropyOptions().ignore_index(3)),
                    IndexError);
  }

  TEST_CASE("shape errors name both shapes and a bad reduction is a ValueError") {
    Tensor x(Array::from_shape({4, 11}));
    CHECK_THROWS_WITH_AS(
        ops::cross_entropy(x, IndexArray{0, 0, 0}),
        doctest::Contains(
            "Expected input batch_size (4) to match target batch_size (3). | cross_entropy: "
            "expected target of shape (4,) for logits (4, 11), got (3,)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::cross_entropy(x, IndexArray::from_shape({4, 2})),
                         doctest::Contains("multi-target not supported | cross_entropy: expected "
                                           "target of shape (4,) for logits (4, 11), got (4, 2)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::cross_entropy(Tensor(Array::from_shape({2, 3, 11})), IndexArray{0, 0}),
        doctest::Contains("cross_entropy: expected logits of shape (N, C) and target of shape "
                          "(N,), got (2, 3, 11) and (2,)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::cross_entropy(x, IndexArray{0, 0, 0, 0}, reduction("avg")),
                         doctest::Contains("avg is not a valid value for reduction"), ValueError);
  }

  TEST_CASE(
      "cross_entropy records nothing under NoGradGuard, and leaves an empty tape after backward") {
    Tensor x = input({3, 4}, 3);
    {
      autograd::NoGradGuard no_grad;
      ops::cross_entropy(x, IndexArray{0, 1, 2});
      CHECK(autograd::tape().empty());
    }
    ops::cross_entropy(x, IndexArray{0, 1, 2}).backward();
    CHECK(autograd::tape().empty());
    CHECK(x.has_grad());
  }

}  // TEST_SUITE
