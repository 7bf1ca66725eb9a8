// tests/ops/test_shape.cpp: reshape, transpose, permute, slice, cat, unsqueeze — values (copies,
// never views), gradients routed back, and every error message.
#include <doctest/doctest.h>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::check_gradients;
using tapegrad::testing::input;

namespace {
// 0, 1, 2, ... in row-major order under `shape`.
Array iota(const Shape& shape) {
  Array a = Array::from_shape(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(i);
  return a;
}
// The values under another shape: {{0.f}, {1.f}}-style literals are ambiguous for xtensor.
Array shaped(Array values, const Shape& shape) {
  values.reshape(shape);
  return values;
}
}  // namespace

TEST_SUITE("ops.shape") {
  TEST_CASE("reshape keeps the row-major order, infers one -1, and copies") {
    Tensor a(iota({2, 3}));
    Tensor y = ops::reshape(a, {3, -1});
    CHECK(y.shape() == Shape{3, 2});
    CHECK(all_close(y.data(), Array{{0.f, 1.f}, {2.f, 3.f}, {4.f, 5.f}}));
    CHECK(ops::reshape(a, {-1}).shape() == Shape{6});
    CHECK(ops::reshape(a, {1, 6, 1}).shape() == Shape{1, 6, 1});
    CHECK(ops::reshape(Tensor(iota({0, 3})), {3, 0}).shape() == Shape{3, 0});
    a.mutable_data()(0, 0) = 42.f;  // no views: y kept its own copy
    CHECK(y.data()(0, 0) == 0.f);
  }

  TEST_CASE("transpose and permute reorder dimensions") {
    Tensor a(iota({2, 3}));
    CHECK(all_close(ops::transpose(a, 0, 1).data(), Array{{0.f, 3.f}, {1.f, 4.f}, {2.f, 5.f}}));
    CHECK(all_close(ops::transpose(a, -1, -2).data(), ops::transpose(a, 1, 0).data()));
    Tensor b(iota({2, 3, 4}));
    Tensor p = ops::permute(b, {2, 0, 1});
    CHECK(p.shape() == Shape{4, 2, 3});
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t k = 0; k < 4; ++k) CHECK(p.data()(k, i, j) == b.data()(i, j, k));
    CHECK(all_close(ops::permute(b, {-1, 0, -2}).data(), p.data()));
    CHECK(ops::transpose(b, 0, 2).data()(3, 1, 0) == b.data()(0, 1, 3));
  }

  TEST_CASE(
      "slice follows Python's slice rules: negative bounds count from the end and are clamped") {
    Tensor a(iota({2, 5}));
    CHECK(all_close(ops::slice(a, 1, 1, 4).data(), Array{{1.f, 2.f, 3.f}, {6.f, 7.f, 8.f}}));
    CHECK(all_close(ops::slice(a, 1, 0, 5, 2).data(), Array{{0.f, 2.f, 4.f}, {5.f, 7.f, 9.f}}));
    CHECK(all_close(ops::slice(a, -1, -2, 100).data(), Array{{3.f, 4.f}, {8.f, 9.f}}));
    CHECK(all_close(ops::slice(a, 0, -100, 1).data(), Array{{0.f, 1.f, 2.f, 3.f, 4.f}}));
    CHECK(all_close(ops::slice(a, 1, 1, 5, 3).data(), Array{{1.f, 4.f}, {6.f, 9.f}}));
    CHECK(ops::slice(a, 1, 4, 2).shape() == Shape{2, 0});  // end before start: empty
    CHECK(ops::slice(a, 1, 7, 9).shape() == Shape{2, 0});
    CHECK(all_close(ops::slice(a, 1, 1, INT64_MAX, INT64_MAX).data(),
                    shaped({1.f, 6.f}, {2, 1})));  // no overflow
  }

  TEST_CASE("cat joins along a dim and unsqueeze inserts a size-1 dim") {
    Tensor a(iota({2, 2}));
    Tensor b(shaped({10.f, 11.f}, {2, 1}));
    CHECK(all_close(ops::cat({a, b}, 1).data(), Array{{0.f, 1.f, 10.f}, {2.f, 3.f, 11.f}}));
    CHECK(all_close(ops::cat({a, a}, -2).data(),
                    Array{{0.f, 1.f}, {2.f, 3.f}, {0.f, 1.f}, {2.f, 3.f}}));
    CHECK(ops::cat({a}).shape() == Shape{2, 2});
    Tensor c(Array{1.f, 2.f, 3.f});
    CHECK(ops::unsqueeze(c, 0).shape() == Shape{1, 3});
    CHECK(all_close(ops::unsqueeze(c, -1).data(), shaped({1.f, 2.f, 3.f}, {3, 1})));
    CHECK(ops::unsqueeze(Tensor(Array(5.f)), 0).shape() == Shape{1});
    CHECK(ops::unsqueeze(a, 1).shape() == Shape{2, 1, 2});
  }

  TEST_CASE("gradients route back: inverse permutation, scatter into zeros, split") {
    Tensor a(iota({2, 3}), true);
    ops::sum(ops::mul(ops::transpose(a, 0, 1), Tensor(Array{{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}})))
        .backward();
    CHECK(all_close(a.grad(), Array{{1.f, 3.f, 5.f}, {2.f, 4.f, 6.f}}));
    a.zero_grad();
    ops::sum(ops::mul(ops::slice(a, 1, 0, 3, 2), Tensor(Array{{1.f, 2.f}, {3.f, 4.f}}))).backward();
    CHECK(all_close(a.grad(), Array{{1.f, 0.f, 2.f}, {3.f, 0.f, 4.f}}));
    Tensor b(shaped({7.f, 8.f}, {2, 1}), true);
    Tensor frozen(shaped({0.f, 0.f}, {2, 1}));
    ops::sum(ops::mul(ops::cat({a, frozen, b}, 1), Tensor(iota({2, 5})))).backward();
    CHECK(all_close(b.grad(), shaped({4.f, 9.f}, {2, 1})));
    CHECK_FALSE(frozen.has_grad());
  }

  TEST_CASE("every shape op passes gradcheck") {
    Tensor a = input({2, 3, 4}, 1);
    Tensor b = input({2, 2, 4}, 2);
    check_gradients([](const std::vector<Tensor>& t) { return ops::reshape(t[0], {4, -1}); }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::transpose(t[0], 0, -1); }, {a});
    check_gradients(
        [](const std::vector<Tensor>& t) {
          return ops::permute(t[0], {1, 2, 0});
        },
        {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::slice(t[0], -1, 1, 4, 2); },
                    {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::slice(t[0], 1, -2, 3); }, {a});
    check_gradients(
        [](const std::vector<Tensor>& t) {
          return ops::cat({t[0], t[1], t[0]}, 1);
        },
        {a, b});
    check_gradients([](const std::vector<Tensor>& t) { return ops::unsqueeze(t[0], -2); }, {a});
  }

  TEST_CASE("reshape errors carry PyTorch's text") {
    Tensor a(iota({2, 3}));
    CHECK_THROWS_WITH_AS(ops::reshape(a, {2, 5}),
                         doctest::Contains("shape '[2, 5]' is invalid for input of size 6"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::reshape(a, {-1, 4}),
                         doctest::Contains("shape '[-1, 4]' is invalid for input of size 6"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::reshape(a, {-1, -1}),
                         doctest::Contains("only one dimension can be inferred"), ValueError);
    CHECK_THROWS_WITH_AS(ops::reshape(a, {-2, 3}), doctest::Contains("invalid shape dimension -2"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        ops::reshape(Tensor(iota({0, 3})), {0, -1}),
        doctest::Contains("the unspecified dimension size -1 can be any value and is ambiguous"),
        ValueError);
  }

  TEST_CASE("transpose, permute and unsqueeze reject bad dims") {
    Tensor a(iota({2, 3}));
    CHECK_THROWS_WITH_AS(
        ops::transpose(a, 0, 2),
        doctest::Contains("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
        IndexError);
    CHECK_THROWS_WITH_AS(ops::permute(a, {0, 0}),
                         doctest::Contains("permute(): duplicate dims are not allowed."),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::permute(a, {1, -1}),
                         doctest::Contains("permute: expected a permutation"), ValueError);
    CHECK_THROWS_WITH_AS(ops::permute(a, {0}),
                         doctest::Contains("input.dim() = 2 is not equal to len(dims) = 1"),
                         ValueError);
    CHECK_THROWS_AS(ops::permute(a, {0, 2}), IndexError);
    CHECK_THROWS_WITH_AS(
        ops::unsqueeze(a, 3),
        doctest::Contains("Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
        IndexError);
    CHECK_THROWS_AS(ops::unsqueeze(a, -4), IndexError);
  }

  TEST_CASE("slice rejects a non-positive step, a bad dim and a 0-dim tensor") {
    Tensor a(iota({2, 3}));
    CHECK_THROWS_WITH_AS(ops::slice(a, 1, 0, 3, 0),
                         doctest::Contains("slice: expected step > 0, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(ops::slice(a, 1, 3, 0, -1),
                         doctest::Contains("step must be greater than zero"), ValueError);
    CHECK_THROWS_AS(ops::slice(a, 2, 0, 1), IndexError);
    CHECK_THROWS_WITH_AS(ops::slice(Tensor(Array(1.f)), 0, 0, 1),
                         doctest::Contains("slice() cannot be applied to a 0-dim tensor."),
                         IndexError);
  }

  TEST_CASE("cat errors name the tensor that does not fit, with PyTorch's text") {
    Tensor a(iota({2, 3}));
    CHECK_THROWS_WITH_AS(
        ops::cat({a, Tensor(iota({3, 3}))}, 1),
        doctest::Contains("Sizes of tensors must match except in dimension 1. Expected size 2 but "
                          "got size 3 for tensor number 1 in the list."),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::cat({a, Tensor(iota({2, 3, 1}))}, 1),
        doctest::Contains("Tensors must have same number of dimensions: got 2 and 3"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::cat({}, 0), doctest::Contains("expected a non-empty list of Tensors"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        ops::cat({Tensor(Array(1.f))}),
        doctest::Contains("zero-dimensional tensor (at position 0) cannot be concatenated"),
        ShapeError);
    CHECK_THROWS_AS(ops::cat({a, a}, 2), IndexError);
  }

  TEST_CASE("shape ops record nothing under NoGradGuard, and leave an empty tape after backward") {
    Tensor a = input({2, 3}, 3);
    {
      autograd::NoGradGuard no_grad;
      ops::reshape(a, {3, 2});
      ops::transpose(a, 0, 1);
      ops::permute(a, {1, 0});
      ops::slice(a, 1, 0, 2);
      ops::cat({a, a});
      ops::unsqueeze(a, 0);
      CHECK(autograd::tape().empty());
    }
    Tensor y = ops::cat({ops::reshape(ops::transpose(a, 0, 1), {2, 3}),
                         ops::slice(ops::permute(a, {0, 1}), 0, 0, 1)});
    ops::sum(ops::unsqueeze(y, 0)).backward();
    CHECK(autograd::tape().empty());
    CHECK(all_close(a.grad(), Array{{2.f, 2.f, 2.f}, {1.f, 1.f, 1.f}}));
  }

}  // TEST_SUITE
