// tests/ops/test_relu_squared.cpp: squared ReLU, relu(x)^2: values by hand, PyTorch goldens,
// gradcheck, the special values, and the tape.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::values;

namespace {
// F.relu(x).square() and d(sum(g * y))/dx, from scripts/golden/relu_squared.py with torch 1.13.0a0.
const std::vector<float> kX = {3.08199215f,  -0.586857796f, -4.35757875f, 1.13686252f,
                               -2.16904473f, -2.7971909f,   0.806693673f, 1.67605269f,
                               -1.43851519f, -0.806687057f, -1.19327068f, 0.364072978f};
const std::vector<float> kG = {-0.856674612f, 1.10060418f,  -1.07118738f,  0.122701243f,
                               -0.566317499f, 0.373114645f, -0.891995311f, -1.50910771f,
                               0.370393544f,  1.45650256f,  0.939809918f,  0.774848819f};
const std::vector<float> kY = {9.49867535f, 0.0f,       0.0f, 1.29245639f, 0.0f, 0.0f,
                               0.65075469f, 2.8091526f, 0.0f, 0.0f,        0.0f, 0.132549137f};
const std::vector<float> kDx = {-5.28052902f, 0.0f,         0.0f, 0.278988898f, 0.0f, 0.0f,
                                -1.439134f,   -5.05868816f, 0.0f, 0.0f,         0.0f, 0.564203024f};
}  // namespace

TEST_SUITE("ops.relu_squared") {
  TEST_CASE("relu_squared is relu(x) * relu(x)") {
    Tensor x(Array{-2.0f, -0.5f, 0.0f, 0.5f, 3.0f});
    CHECK(testing::bit_equal(ops::relu_squared(x).data(), Array{0.0f, 0.0f, 0.0f, 0.25f, 9.0f}));
  }

  TEST_CASE("relu_squared matches PyTorch's F.relu(x).square(), values and gradients") {
    Tensor x(values({12}, kX), true);
    Tensor y = ops::relu_squared(x);
    CHECK(all_close(y.data(), values({12}, kY), 0.0, 1e-6));
    y.backward(values({12}, kG));
    CHECK(all_close(x.grad(), values({12}, kDx), 0.0, 1e-6));
  }

  TEST_CASE("relu_squared's gradient matches finite differences") {
    // away from the kink at 0, where a finite difference of step 1e-2 straddles both sides
    Tensor x = testing::input({3, 5}, 11, false);
    Array shifted = x.data();
    for (float& v : shifted) v += v < 0 ? -0.1f : 0.1f;
    testing::check_gradients([](const std::vector<Tensor>& t) { return ops::relu_squared(t[0]); },
                             {Tensor(shifted, true)});
  }

  TEST_CASE("relu_squared keeps NaN and infinities as PyTorch does") {
    // PyTorch 1.13 (scripts/golden/relu_squared.py): x = [-inf, -2, -0, 0, 0.5, 3, inf, nan]
    // gives y = [0, 0, 0, 0, 0.25, 9, inf, nan] and, for g = 1, dx = [0, 0, 0, 0, 1, 6, inf, nan].
    const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
    Tensor x(Array{-inf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, inf, nan}, true);
    Tensor y = ops::relu_squared(x);
    const Array want_y{0.0f, 0.0f, 0.0f, 0.0f, 0.25f, 9.0f, inf, 0.0f};
    for (std::size_t i = 0; i < 7; ++i) CHECK(y.data()(i) == want_y(i));
    CHECK(std::isnan(y.data()(7)));
    y.backward(Array(xt::ones<float>({8})));
    const Array want_dx{0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 6.0f, inf, 0.0f};
    for (std::size_t i = 0; i < 7; ++i) CHECK(x.grad()(i) == want_dx(i));
    CHECK(std::isnan(x.grad()(7)));
  }

  TEST_CASE("relu_squared gives 0, not NaN, where x <= 0 and the incoming gradient is infinite") {
    Tensor x(Array{-1.0f, 0.0f, 2.0f}, true);
    ops::relu_squared(x).backward(Array{INFINITY, INFINITY, INFINITY});
    CHECK(x.grad()(0) == 0.0f);
    CHECK(x.grad()(1) == 0.0f);
    CHECK(x.grad()(2) == INFINITY);
  }

  TEST_CASE(
      "relu_squared records one entry, nothing under NoGradGuard, and frees it after backward") {
    Tensor x(Array{0.5f, -0.5f}, true);
    const std::size_t before = autograd::tape().size();
    {
      autograd::NoGradGuard no_grad;
      ops::relu_squared(x);
      CHECK(autograd::tape().size() == before);
    }
    Tensor loss = ops::sum(ops::relu_squared(x));
    CHECK(autograd::tape().size() == before + 2);
    bool named = false;
    for (const auto& entry : autograd::tape().entries())
      named = named || entry.op == "relu_squared";
    CHECK(named);
    loss.backward();
    CHECK(autograd::tape().empty());
  }
}  // TEST_SUITE
