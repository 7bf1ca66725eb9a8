// tests/ops/test_reduce.cpp: sum/mean over dims, max, max(dim), argmax — values, gradients, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::check_gradients;
using tapegrad::testing::input;

namespace {
const float not_a_number = std::numeric_limits<float>::quiet_NaN();
// The values under another shape: {{6.f}, {15.f}}-style literals are ambiguous for xtensor.
Array shaped(Array values, const Shape& shape) {
  values.reshape(shape);
  return values;
}
}  // namespace

TEST_SUITE("ops.reduce") {
  TEST_CASE("sum and mean over one dim drop it, or keep it as size 1 with keepdim") {
    Tensor a(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
    CHECK(all_close(ops::sum(a, 0).data(), Array{5.f, 7.f, 9.f}));
    CHECK(all_close(ops::sum(a, 1).data(), Array{6.f, 15.f}));
    CHECK(all_close(ops::sum(a, -1, /*keepdim=*/true).data(), shaped({6.f, 15.f}, {2, 1})));
    CHECK(all_close(ops::sum(a, 0, true).data(), Array{{5.f, 7.f, 9.f}}));
    CHECK(all_close(ops::mean(a, 1).data(), Array{2.f, 5.f}));
    CHECK(all_close(ops::mean(a, -2, true).data(), Array{{2.5f, 3.5f, 4.5f}}));
  }

  TEST_CASE("sum and mean over several dims, and an empty list of dims means all of them") {
    Array v = Array::from_shape({2, 3, 2});
    for (std::size_t i = 0; i < v.size(); ++i) v.data()[i] = static_cast<float>(i);  // 0 .. 11
    Tensor a(v);
    CHECK(all_close(ops::sum(a, std::vector<std::int64_t>{0, 2}).data(), Array{14.f, 22.f, 30.f}));
    CHECK(all_close(ops::sum(a, {-1, 0}, true).data(), shaped({14.f, 22.f, 30.f}, {1, 3, 1})));
    CHECK(all_close(ops::mean(a, std::vector<std::int64_t>{1, 2}).data(), Array{2.5f, 8.5f}));
    Tensor all = ops::sum(a, std::vector<std::int64_t>{});
    CHECK(all.shape() == Shape{});
    CHECK(all.item() == 66.f);
    CHECK(ops::mean(a, std::vector<std::int64_t>{}, true).shape() == Shape{1, 1, 1});
  }

  TEST_CASE("sums accumulate in double, so a small term survives between large ones") {
    Tensor a(Array{{1e8f, 1.f, -1e8f}});  // in float, 1e8 + 1 rounds back to 1e8
    CHECK(ops::sum(a, 1).data()(0) == 1.f);
    CHECK(ops::mean(a, 1).data()(0) == doctest::Approx(1.0 / 3.0));
  }

  TEST_CASE("the gradient of a sum over dims is dy broadcast back, and of a mean dy / count") {
    Tensor a(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}, true);
    ops::sum(ops::mul(ops::sum(a, 1), Tensor(Array{1.f, 10.f}))).backward();
    CHECK(all_close(a.grad(), Array{{1.f, 1.f, 1.f}, {10.f, 10.f, 10.f}}));
    a.zero_grad();
    ops::sum(ops::mul(ops::mean(a, 0, true), Tensor(Array{{2.f, 4.f, 6.f}}))).backward();
    CHECK(all_close(a.grad(), Array{{1.f, 2.f, 3.f}, {1.f, 2.f, 3.f}}));
  }

  TEST_CASE("sum and mean over dims pass gradcheck, with negative dims and keepdim") {
    Tensor a = input({2, 3, 4}, 1);
    for (bool keepdim : {false, true}) {
      CAPTURE(keepdim);
      check_gradients([=](const std::vector<Tensor>& t) { return ops::sum(t[0], 1, keepdim); },
                      {a});
      check_gradients([=](const std::vector<Tensor>& t) { return ops::sum(t[0], -1, keepdim); },
                      {a});
      check_gradients(
          [=](const std::vector<Tensor>& t) {
            return ops::sum(t[0], {0, -1}, keepdim);
          },
          {a});
      check_gradients([=](const std::vector<Tensor>& t) { return ops::mean(t[0], 0, keepdim); },
                      {a});
      check_gradients(
          [=](const std::vector<Tensor>& t) {
            return ops::mean(t[0], {2, 1}, keepdim);
          },
          {a});
    }
  }

  TEST_CASE("a scalar reduced over dim 0 or -1 is itself") {
    Tensor s(Array(3.5f), true);
    CHECK(ops::sum(s, 0).item() == 3.5f);
    CHECK(ops::mean(s, -1, true).shape() == Shape{});
    CHECK(ops::max(s, 0).item() == 3.5f);
    ops::sum(s, 0).backward();
    CHECK(s.grad()() == 1.f);
  }

  TEST_CASE("max() shares the gradient evenly among tied maxima") {
    Tensor a(Array{{1.f, 3.f}, {3.f, -2.f}}, true);
    Tensor m = ops::max(a);
    CHECK(m.shape() == Shape{});
    CHECK(m.item() == 3.f);
    ops::mul(m, 4.0).backward();
    CHECK(all_close(a.grad(), Array{{0.f, 2.f}, {2.f, 0.f}}));
  }

  TEST_CASE("max() propagates NaN and sends the gradient to the NaN elements") {
    Tensor a(Array{1.f, not_a_number, 5.f}, true);
    Tensor m = ops::max(a);
    CHECK(std::isnan(m.item()));
    m.backward();
    CHECK(all_close(a.grad(), Array{0.f, 1.f, 0.f}));
  }

  TEST_CASE("max(dim) gives the largest values and argmax the first index holding them") {
    Tensor a(Array{{1.f, 3.f, 3.f}, {2.f, 2.f, -1.f}});
    CHECK(all_close(ops::max(a, 1).data(), Array{3.f, 2.f}));
    CHECK(ops::argmax(a, 1) == IndexArray{1, 0});
    const IndexArray kept = ops::argmax(a, -1, /*keepdim=*/true);
    CHECK(kept.shape() == Shape{2, 1});
    CHECK((kept(0, 0) == 1 && kept(1, 0) == 0));
    CHECK(all_close(ops::max(a, 0, true).data(), Array{{2.f, 3.f, 3.f}}));
    CHECK(ops::argmax(a, 0) == IndexArray{1, 0, 0});
    Tensor b(Array{{1.f, not_a_number, 7.f}});
    CHECK(std::isnan(ops::max(b, 1).data()(0)));
    CHECK(ops::argmax(b, 1)(0) == 1);
  }

  TEST_CASE("max(dim) sends the gradient to the first index holding the max only") {
    Tensor a(Array{{1.f, 3.f, 3.f}, {2.f, 2.f, -1.f}}, true);
    ops::sum(ops::mul(ops::max(a, 1), Tensor(Array{10.f, 20.f}))).backward();
    CHECK(all_close(a.grad(), Array{{0.f, 10.f, 0.f}, {20.f, 0.f, 0.f}}));
  }

  TEST_CASE("max and max(dim) pass gradcheck away from ties") {
    Array v = Array::from_shape({2, 3, 4});  // 0.1 * a permutation of 0..23: no two within 2 eps
    for (std::size_t i = 0; i < v.size(); ++i) v.data()[i] = 0.1f * static_cast<float>(i * 7 % 24);
    Tensor a(v, true);
    check_gradients([](const std::vector<Tensor>& t) { return ops::max(t[0]); }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::max(t[0], 1); }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::max(t[0], -1, true); }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::max(t[0], 0); }, {a});
  }

  TEST_CASE("a dim out of range is an IndexError with PyTorch's text") {
    Tensor a(Array::from_shape({2, 3}));
    CHECK_THROWS_WITH_AS(
        ops::sum(a, 2),
        doctest::Contains("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
        IndexError);
    CHECK_THROWS_WITH_AS(ops::mean(a, {0, -3}),
                         doctest::Contains("mean: a tensor of rank 2 has no dimension -3"),
                         IndexError);
    CHECK_THROWS_AS(ops::max(a, -3), IndexError);
    CHECK_THROWS_WITH_AS(ops::argmax(a, 5),
                         doctest::Contains("argmax: a tensor of rank 2 has no dimension 5"),
                         IndexError);
  }

  TEST_CASE("a dim listed twice is a ValueError") {
    Tensor a(Array::from_shape({2, 3}));
    CHECK_THROWS_WITH_AS(ops::sum(a, {1, -1}),
                         doctest::Contains("dim 1 appears multiple times in the list of dims"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::mean(a, {0, 0}), doctest::Contains("mean: expected distinct dims"),
                         ValueError);
  }

  TEST_CASE("max of an empty tensor, or along an empty dim, is an error naming the shape") {
    CHECK_THROWS_WITH_AS(ops::max(Tensor(Array::from_shape({0, 3}))),
                         doctest::Contains("max: expected a non-empty tensor, got shape (0, 3)"),
                         ShapeError);
    Tensor e(Array::from_shape({2, 0}));
    CHECK_THROWS_WITH_AS(
        ops::max(e, 1), doctest::Contains("max(): Expected reduction dim 1 to have non-zero size."),
        IndexError);
    CHECK_THROWS_WITH_AS(
        ops::argmax(e, -1),
        doctest::Contains("argmax: expected dimension -1 of shape (2, 0) to be non-empty"),
        IndexError);
    CHECK(ops::max(e, 0).shape() == Shape{0});  // reducing the non-empty dim is fine
  }

  TEST_CASE("reductions record nothing under NoGradGuard, and leave an empty tape after backward") {
    Tensor a = input({2, 3}, 3);
    {
      autograd::NoGradGuard no_grad;
      ops::sum(a, 0);
      ops::mean(a, {0, 1});
      ops::max(a);
      ops::max(a, 1);
      CHECK(autograd::tape().empty());
    }
    ops::sum(ops::add(ops::add(ops::sum(a, 0, true), ops::mean(a, 1, true)), ops::max(a, 0)))
        .backward();
    CHECK(autograd::tape().empty());
    CHECK(a.has_grad());
  }

}  // TEST_SUITE
