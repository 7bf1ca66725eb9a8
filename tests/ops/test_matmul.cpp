// tests/ops/test_matmul.cpp: matmul (2-D, batched, folded leading dims) and linear — values,
// gradients to each side, errors with PyTorch's text.
#include <doctest/doctest.h>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::check_gradients;
using tapegrad::testing::input;

TEST_SUITE("ops.matmul") {
  TEST_CASE("a 2-D product and its gradients dA = dY B^T, dB = A^T dY") {
    Tensor a(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}, true);
    Tensor b(Array{{1.f, 0.f}, {0.f, 1.f}, {2.f, -1.f}}, true);
    Tensor y = ops::matmul(a, b);
    CHECK(all_close(y.data(), Array{{7.f, -1.f}, {16.f, -1.f}}));
    ops::sum(ops::mul(y, Tensor(Array{{1.f, 2.f}, {3.f, 4.f}}))).backward();
    // dY = [[1, 2], [3, 4]]: dA = dY B^T, dB = A^T dY
    CHECK(all_close(a.grad(), Array{{1.f, 2.f, 0.f}, {3.f, 4.f, 2.f}}));
    CHECK(all_close(b.grad(), Array{{13.f, 18.f}, {17.f, 24.f}, {21.f, 30.f}}));
  }

  TEST_CASE("batched and folded products equal the per-matrix products") {
    Tensor a = input({3, 2, 4}, 1, false), b = input({3, 4, 5}, 2, false),
           w = input({4, 5}, 3, false);
    Tensor y = ops::matmul(a, b);
    CHECK(y.shape() == Shape{3, 2, 5});
    Tensor folded = ops::matmul(a, w);
    CHECK(folded.shape() == Shape{3, 2, 5});
    for (std::int64_t i = 0; i < 3; ++i) {
      Tensor ai = ops::reshape(ops::slice(a, 0, i, i + 1), {2, 4});
      Tensor bi = ops::reshape(ops::slice(b, 0, i, i + 1), {4, 5});
      CHECK(all_close(ops::reshape(ops::slice(y, 0, i, i + 1), {2, 5}).data(),
                      ops::matmul(ai, bi).data(), 1e-5));
      CHECK(all_close(ops::reshape(ops::slice(folded, 0, i, i + 1), {2, 5}).data(),
                      ops::matmul(ai, w).data(), 1e-5));
    }
    Tensor four = input({2, 1, 3, 4}, 4, false);
    CHECK(ops::matmul(four, w).shape() == Shape{2, 1, 3, 5});
  }

  TEST_CASE("batch dimensions broadcast as torch.matmul's: each product is its matrices' own") {
    // (2, 1, 3, 4) @ (3, 4, 5): batch (2, 1) against (3,) broadcasts to (2, 3).
    Tensor a = input({2, 1, 3, 4}, 21, false), b = input({3, 4, 5}, 22, false);
    Tensor y = ops::matmul(a, b);
    REQUIRE(y.shape() == Shape{2, 3, 3, 5});
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j) {
        Tensor ai = ops::reshape(ops::slice(a, 0, i, i + 1), {3, 4});
        Tensor bj = ops::reshape(ops::slice(b, 0, j, j + 1), {4, 5});
        Tensor yij = ops::reshape(ops::slice(ops::slice(y, 0, i, i + 1), 1, j, j + 1), {3, 5});
        CHECK(all_close(yij.data(), ops::matmul(ai, bj).data(), 1e-5));
      }
    // A 2-D a against a batch of b: the one matrix of a multiplies each of b's.
    Tensor m = input({3, 4}, 23, false);
    Tensor z = ops::matmul(m, b);
    REQUIRE(z.shape() == Shape{3, 3, 5});
    for (std::int64_t j = 0; j < 3; ++j)
      CHECK(all_close(ops::reshape(ops::slice(z, 0, j, j + 1), {3, 5}).data(),
                      ops::matmul(m, ops::reshape(ops::slice(b, 0, j, j + 1), {4, 5})).data(),
                      1e-5));
  }

  TEST_CASE("a matrix shared by broadcast products gets the sum of their gradients") {
    // ALiBi-style (B, h, T, d) @ (1, h, d, T): b's batch of 1 is shared by every a of the batch.
    check_gradients([](const std::vector<Tensor>& t) { return ops::matmul(t[0], t[1]); },
                    {input({2, 3, 4, 5}, 24), input({1, 3, 5, 4}, 25)});
    check_gradients([](const std::vector<Tensor>& t) { return ops::matmul(t[0], t[1]); },
                    {input({3, 4}, 26), input({2, 4, 3}, 27)});
    check_gradients([](const std::vector<Tensor>& t) { return ops::matmul(t[0], t[1]); },
                    {input({2, 1, 2, 3}, 28), input({3, 3, 2}, 29)});
    // The sum, by hand: a (1, 2, 2) shared by two products with b (2, 2, 2) = [I, 2I].
    Tensor a(Array{{{1.f, 1.f}, {1.f, 1.f}}}, true);
    Tensor b(Array{{{1.f, 0.f}, {0.f, 1.f}}, {{2.f, 0.f}, {0.f, 2.f}}}, true);
    ops::sum(ops::matmul(a, b)).backward();
    CHECK(all_close(a.grad(), Array{{{3.f, 3.f}, {3.f, 3.f}}}));  // dY B^T summed: 1 + 2
  }

  TEST_CASE("matmul passes gradcheck: 2-D, batched, folded") {
    check_gradients([](const std::vector<Tensor>& t) { return ops::matmul(t[0], t[1]); },
                    {input({3, 4}, 5), input({4, 2}, 6)});
    check_gradients([](const std::vector<Tensor>& t) { return ops::matmul(t[0], t[1]); },
                    {input({2, 3, 4}, 7), input({2, 4, 3}, 8)});
    check_gradients([](const std::vector<Tensor>& t) { return ops::matmul(t[0], t[1]); },
                    {input({2, 2, 3, 4}, 9), input({4, 3}, 10)});
  }

  TEST_CASE("a side that needs no gradient gets none") {
    Tensor a = input({2, 3}, 11), b = input({3, 2}, 12, false);
    ops::sum(ops::matmul(a, b)).backward();
    CHECK(a.has_grad());
    CHECK_FALSE(b.has_grad());
    Tensor c = input({2, 3}, 13, false), d = input({3, 2}, 14);
    check_gradients([](const std::vector<Tensor>& t) { return ops::matmul(t[0], t[1]); }, {c, d});
    CHECK_FALSE(c.has_grad());
  }

  TEST_CASE("an empty inner dimension gives zeros") {
    Tensor a(Array::from_shape({2, 0}), true), b(Array::from_shape({0, 3}), true);
    Tensor y = ops::matmul(a, b);
    CHECK(all_close(y.data(), xt::zeros<float>({2, 3})));
    ops::sum(y).backward();
    CHECK(a.grad().shape() == Shape{2, 0});
    CHECK(b.grad().shape() == Shape{0, 3});
  }

  TEST_CASE("matmul size mismatches carry PyTorch's text and both shapes") {
    Tensor a(Array::from_shape({2, 3}));
    CHECK_THROWS_WITH_AS(
        ops::matmul(a, Tensor(Array::from_shape({4, 5}))),
        doctest::Contains(
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5) | matmul: expected (..., n, "
            "k) @ (k, m) with the same k, got shapes (2, 3) and (4, 5)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::matmul(Tensor(Array::from_shape({2, 5, 8})), Tensor(Array::from_shape({16, 11}))),
        doctest::Contains("mat1 and mat2 shapes cannot be multiplied (10x8 and 16x11)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::matmul(Tensor(Array::from_shape({2, 2, 3})), Tensor(Array::from_shape({2, 4, 5}))),
        doctest::Contains("Expected size for first two dimensions of batch2 tensor to be: [2, 3] "
                          "but got: [2, 4]."),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::matmul(Tensor(Array::from_shape({2, 2, 3})), Tensor(Array::from_shape({3, 3, 5}))),
        doctest::Contains("The size of tensor a (2) must match the size of tensor b (3) at "
                          "non-singleton dimension 0"),
        ShapeError);
    CHECK(ops::matmul(Tensor(Array::from_shape({1, 2, 3})), Tensor(Array::from_shape({2, 3, 5})))
              .shape() == Shape{2, 2, 5});  // a batch of 1 broadcasts, as in PyTorch
    CHECK_THROWS_WITH_AS(
        ops::matmul(Tensor(Array::from_shape({2, 3, 2, 3})), Tensor(Array::from_shape({4, 3, 5}))),
        doctest::Contains("The size of tensor a (3) must match the size of tensor b (4) at "
                          "non-singleton dimension 1 | matmul: expected batch dimensions that "
                          "broadcast (equal, or one of them 1), got shapes (2, 3, 2, 3) and (4, "
                          "3, 5)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::matmul(Tensor(Array{1.f, 2.f, 3.f}), a),
        doctest::Contains("matmul: expected (..., n, k) @ (..., k, m), two tensors of 2 or more "
                          "dimensions whose batch dimensions broadcast, got shapes (3,) and (2, 3) "
                          "(PyTorch's products with a 1-D vector are not supported: unsqueeze it)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::matmul(a, Tensor(Array::from_shape({2, 4, 4}))),
                         doctest::Contains("Expected size for first two dimensions of batch2 "
                                           "tensor to be: [2, 3] but got: [2, 4]."),
                         ShapeError);
  }

  TEST_CASE("linear computes x W^T + b over any leading dims") {
    Tensor x(Array{{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
    Tensor w(Array{{1.f, 0.f}, {0.f, 1.f}, {1.f, 1.f}});  // (out = 3, in = 2)
    Tensor b(Array{10.f, 20.f, 30.f});
    CHECK(all_close(ops::linear(x, w, b).data(),
                    Array{{11.f, 22.f, 33.f}, {13.f, 24.f, 37.f}, {15.f, 26.f, 41.f}}));
    CHECK(all_close(ops::linear(x, w).data(),
                    Array{{1.f, 2.f, 3.f}, {3.f, 4.f, 7.f}, {5.f, 6.f, 11.f}}));
    CHECK(all_close(ops::linear(Tensor(Array{1.f, 2.f}), w, b).data(), Array{11.f, 22.f, 33.f}));
    Tensor x3 = input({2, 3, 4}, 15, false), w3 = input({5, 4}, 16, false),
           b3 = input({5}, 17, false);
    Tensor y = ops::linear(x3, w3, b3);
    CHECK(y.shape() == Shape{2, 3, 5});
    CHECK(
        all_close(y.data(), ops::add(ops::matmul(x3, ops::transpose(w3, 0, 1)), b3).data(), 1e-5));
  }

  TEST_CASE("linear's gradients: dx = dy W, dW = dy^T x over all rows, db = column sums of dy") {
    Tensor x(Array{{1.f, 2.f}, {3.f, 4.f}}, true);
    Tensor w(Array{{1.f, -1.f}, {2.f, 0.5f}, {0.f, 3.f}}, true);
    Tensor b(Array{0.f, 0.f, 0.f}, true);
    const Tensor dy(Array{{1.f, 0.f, 2.f}, {0.f, 1.f, -1.f}});
    ops::sum(ops::mul(ops::linear(x, w, b), dy)).backward();
    CHECK(all_close(x.grad(), Array{{1.f, 5.f}, {2.f, -2.5f}}));
    CHECK(all_close(w.grad(), Array{{1.f, 2.f}, {3.f, 4.f}, {-1.f, 0.f}}));
    CHECK(all_close(b.grad(), Array{1.f, 1.f, 1.f}));
  }

  TEST_CASE("linear passes gradcheck with and without bias, and with leading dims") {
    Tensor x = input({2, 3, 4}, 18), w = input({5, 4}, 19), b = input({5}, 20);
    check_gradients([](const std::vector<Tensor>& t) { return ops::linear(t[0], t[1], t[2]); },
                    {x, w, b});
    check_gradients([](const std::vector<Tensor>& t) { return ops::linear(t[0], t[1]); }, {x, w});
    check_gradients([](const std::vector<Tensor>& t) { return ops::linear(t[0], t[1], t[2]); },
                    {input({3, 4}, 21), w, b});
    Tensor frozen_x = input({3, 4}, 22, false);  // only the parameters need gradients
    check_gradients([](const std::vector<Tensor>& t) { return ops::linear(t[0], t[1], t[2]); },
                    {frozen_x, w, b});
    CHECK_FALSE(frozen_x.has_grad());
  }

  TEST_CASE("linear errors: PyTorch's text, naming the module when inside one") {
    Tensor x(Array::from_shape({2, 5, 8})), w(Array::from_shape({11, 16}));
    CHECK_THROWS_WITH_AS(
        ops::linear(x, w),
        doctest::Contains("mat1 and mat2 shapes cannot be multiplied (10x8 and 16x11) | linear: "
                          "expected input with last dimension 16, got shape (2, 5, 8)"),
        ShapeError);
    {
      autograd::ModuleScope scope("Linear", "out");
      CHECK_THROWS_WITH_AS(
          ops::linear(x, w),
          doctest::Contains("mat1 and mat2 shapes cannot be multiplied (10x8 and 16x11) | Linear "
                            "'out': expected input with last dimension 16, got shape (2, 5, 8)"),
          ShapeError);
    }
    Tensor x16(Array::from_shape({2, 16}));
    CHECK_THROWS_WITH_AS(
        ops::linear(x16, w, Tensor(Array::from_shape({5}))),
        doctest::Contains(
            "linear: expected bias of shape (11,) to match weight (11, 16), got (5,)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        ops::linear(x16, Tensor(Array::from_shape({16}))),
        doctest::Contains(
            "linear: expected weight of shape (out_features, in_features), got (16,)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(ops::linear(Tensor(Array(1.f)), w),
                         doctest::Contains("both arguments to linear need to be at least 1D"),
                         ShapeError);
  }

  TEST_CASE(
      "matmul and linear record nothing under NoGradGuard, and leave an empty tape after "
      "backward") {
    Tensor x = input({2, 3}, 23), w = input({4, 3}, 24), b = input({4}, 25);
    {
      autograd::NoGradGuard no_grad;
      ops::matmul(x, ops::transpose(w, 0, 1));
      ops::linear(x, w, b);
      CHECK(autograd::tape().empty());
    }
    ops::sum(ops::add(ops::linear(x, w, b), ops::matmul(x, ops::transpose(w, 0, 1)))).backward();
    CHECK(autograd::tape().empty());
    CHECK(all_close(b.grad(), Array{2.f, 2.f, 2.f, 2.f}));
  }

}  // TEST_SUITE
