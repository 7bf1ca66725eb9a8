// tests/ops/test_lora_linear.cpp: lora_linear, a Linear with a LoRA adapter as one op (PEFT's
// lora.Linear: x W^T + b + s lora_B(lora_A(dropout(x)))): its values against the same maths in
// linear, mul and add ops, gradcheck over every input, frozen sides, one tape entry, and the errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tapegrad/autograd/tape.hpp>
#include <tapegrad/ops/elementwise.hpp>
#include <tapegrad/ops/matmul.hpp>
#include <tapegrad/ops/reduce.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::check_gradients;
using tapegrad::testing::input;

namespace {
// PEFT's order in ops: linear(x, W, b) + linear(linear(xd, A), B) * s.
Tensor composed(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& xd,
                const Tensor& a, const Tensor& bb, float s) {
  return ops::linear(x, w, b) + ops::linear(ops::linear(xd, a), bb) * s;
}
}  // namespace

TEST_SUITE("ops.lora_linear") {
  TEST_CASE("lora_linear computes linear plus the scaled adapter, on (*, in) inputs") {
    const Tensor x = input({2, 3, 5}, 1), w = input({4, 5}, 2), b = input({4}, 3);
    const Tensor a = input({2, 5}, 4), bb = input({4, 2}, 5);
    const Tensor y = ops::lora_linear(x, w, b, x, a, bb, 2.5f);
    CHECK(y.shape() == Shape{2, 3, 4});
    CHECK(all_close(y.data(), composed(x, w, b, x, a, bb, 2.5f).data(), 1e-6));
    CHECK(all_close(ops::lora_linear(x, w, Tensor(), x, a, bb, 0.5f).data(),
                    composed(x, w, Tensor(), x, a, bb, 0.5f).data(), 1e-6));
  }

  TEST_CASE("lora_linear passes gradcheck in every input, the adapter's input apart from x's") {
    check_gradients(
        [](const std::vector<Tensor>& t) {
          return ops::lora_linear(t[0], t[1], t[2], t[3], t[4], t[5], 1.5f);
        },
        {input({3, 5}, 6), input({4, 5}, 7), input({4}, 8), input({3, 5}, 9), input({2, 5}, 10),
         input({4, 2}, 11)});
    // x itself as the adapter's input (no dropout): its gradient is the sum of both paths.
    check_gradients(
        [](const std::vector<Tensor>& t) {
          return ops::lora_linear(t[0], t[1], Tensor(), t[0], t[2], t[3], 0.75f);
        },
        {input({2, 2, 5}, 12), input({3, 5}, 13), input({2, 5}, 14), input({3, 2}, 15)});
  }

  TEST_CASE("a frozen base gets no gradient, and the adapter's gradients equal the composed ops'") {
    const Tensor w = input({4, 5}, 16, false), b = input({4}, 17, false);
    const Tensor x1 = input({3, 5}, 18), a1 = input({2, 5}, 19), b1 = input({4, 2}, 20);
    const Tensor x2 = Tensor(x1.data(), true), a2 = Tensor(a1.data(), true),
                 b2 = Tensor(b1.data(), true);
    ops::sum(ops::lora_linear(x1, w, b, x1, a1, b1, 2.0f)).backward();
    ops::sum(composed(x2, w, b, x2, a2, b2, 2.0f)).backward();
    CHECK_FALSE(w.has_grad());
    CHECK_FALSE(b.has_grad());
    CHECK(all_close(a1.grad(), a2.grad(), 1e-6));
    CHECK(all_close(b1.grad(), b2.grad(), 1e-6));
    CHECK(all_close(x1.grad(), x2.grad(), 1e-6));
  }

  TEST_CASE("lora_linear is one tape entry, which keeps no (N, out) tensor") {
    // Composed, the tape would hold the adapter's (N, out) output, its scaled copy and the
    // base's output until backward: three of a layer's largest tensors.
    const Tensor x = input({3, 5}, 21), w = input({4, 5}, 22, false);
    const Tensor a = input({2, 5}, 23), bb = input({4, 2}, 24);
    const Tensor y = ops::lora_linear(x, w, Tensor(), x, a, bb, 1.0f);
    const auto entries = autograd::tape().entries();
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].op == "lora_linear");
    for (const auto& saved : entries[0].saved) CHECK(saved.shape != y.shape());
  }

  TEST_CASE("lora_linear refuses an adapter that does not fit, naming the matrix and shapes") {
    const Tensor x = input({3, 5}, 25), w = input({4, 5}, 26);
    const Tensor a = input({2, 5}, 27), bb = input({4, 2}, 28);
    CHECK_THROWS_WITH_AS(ops::lora_linear(x, w, Tensor(), x, input({2, 6}, 29), bb, 1.0f),
                         doctest::Contains("expected lora_A of shape (r, 5), got (2, 6)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::lora_linear(x, w, Tensor(), x, a, input({4, 3}, 30), 1.0f),
                         doctest::Contains("expected lora_B of shape (4, 2), got (4, 3)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::lora_linear(x, w, Tensor(), input({2, 5}, 31), a, bb, 1.0f),
                         doctest::Contains("expected the adapter's input of x's shape (3, 5), "
                                           "got (2, 5)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::lora_linear(input({3, 6}, 32), w, Tensor(), x, a, bb, 1.0f),
                         doctest::Contains("mat1 and mat2 shapes cannot be multiplied"),
                         ShapeError);
  }
}
