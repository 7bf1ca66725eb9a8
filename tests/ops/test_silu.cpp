// tests/ops/test_silu.cpp: SiLU, x * sigmoid(x): values by hand, PyTorch goldens, gradcheck, the
// tails, and the tape.
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
// F.silu(x) and d(sum(g * y))/dx, from scripts/golden/gpt_layers.py with torch 1.13.0a0.
const std::vector<float> kX = {
    -90.0f,       -20.0f,         -5.0f,        -1.0f,        -0.00100000005f,
    0.0f,         0.00100000005f, 1.0f,         5.0f,         20.0f,
    4.62298822f,  -0.880286694f,  -6.53636837f, 1.70529377f,  -3.25356722f,
    -4.19578648f, 1.21004057f,    2.51407909f,  -2.15777278f, -1.21003056f};  // (20,)
const std::vector<float> kG = {0.598839462f,  -1.55509508f,  -0.34136039f, 1.85300612f,
                               -0.215863258f, -0.742548168f, 0.562721372f, 0.259627402f,
                               -0.173960999f, -0.678746223f, 0.938260734f, 0.488869816f,
                               1.20322371f,   0.0845346972f, -1.2001394f,  -0.00478573795f,
                               -0.518074811f, -0.306704193f, -1.58099389f, 1.70664334f};  // (20,)
const std::vector<float> kY = {
    -0.0f,          -4.12230747e-08f, -0.0334642529f,  -0.268941432f, -0.000499750022f,
    0.0f,           0.000500250026f,  0.731058598f,    4.96653557f,   20.0f,
    4.57801628f,    -0.258028209f,    -0.00946234167f, 1.44306195f,   -0.121029176f,
    -0.0622465424f, 0.932101727f,     2.32583237f,     -0.223560616f, -0.277938753f};  // (20,)
const std::vector<float> kDx = {
    -0.0f,           6.09005113e-08f, 0.00906224176f,  0.134026974f,  -0.1078237f,
    -0.371274084f,   0.28164202f,     0.240848675f,    -0.178579211f, -0.678746223f,
    0.970918357f,    0.0541291162f,   -0.00962699112f, 0.0902942121f, 0.0952047855f,
    0.000222477436f, -0.509994984f,   -0.337152034f,   0.153026015f,  0.0266206078f};  // (20,)
}  // namespace

TEST_SUITE("ops.silu") {
  TEST_CASE("silu is x * sigmoid(x)") {
    Tensor x(Array{-2.0f, -0.5f, 0.0f, 0.5f, 3.0f});
    const Array y = ops::silu(x).data();
    for (std::size_t i = 0; i < 5; ++i) {
      const double v = x.data()(i);
      CHECK(y(i) == doctest::Approx(v / (1.0 + std::exp(-v))).epsilon(1e-6));
    }
    CHECK(y(2) == 0.0f);
    CHECK(y(4) == doctest::Approx(3.0 / (1.0 + std::exp(-3.0))).epsilon(1e-7));
  }

  TEST_CASE("silu matches PyTorch's F.silu, values and gradients") {
    Tensor x(values({20}, kX), true);
    Tensor y = ops::silu(x);
    CHECK(all_close(y.data(), values({20}, kY), 1e-7, 1e-6));
    y.backward(values({20}, kG));
    CHECK(all_close(x.grad(), values({20}, kDx), 1e-7, 1e-5));
  }

  TEST_CASE("silu's gradient matches finite differences") {
    testing::check_gradients([](const std::vector<Tensor>& t) { return ops::silu(t[0]); },
                             {testing::input({3, 5}, 11)});
  }

  TEST_CASE("silu's tails are PyTorch's: -0 far left, NaN at -inf (-inf / inf), NaN stays NaN") {
    // PyTorch 1.13: F.silu([-inf, -200, 200, inf, nan]) = [nan, -0, 200, inf, nan], and the
    // gradient of sum(g * y) for g = [1, 1, 1, 1, 0] is [nan, -0, 1, nan, nan].
    const float inf = std::numeric_limits<float>::infinity();
    Tensor x(Array{-inf, -200.0f, 200.0f, inf, std::numeric_limits<float>::quiet_NaN()}, true);
    Tensor y = ops::silu(x);
    CHECK(std::isnan(y.data()(0)));
    CHECK(y.data()(1) == 0.0f);
    CHECK(std::signbit(y.data()(1)));
    CHECK(y.data()(2) == 200.0f);
    CHECK(y.data()(3) == inf);
    CHECK(std::isnan(y.data()(4)));
    y.backward(Array{1.0f, 1.0f, 1.0f, 1.0f, 0.0f});
    CHECK(std::isnan(x.grad()(0)));
    CHECK(x.grad()(1) == 0.0f);
    CHECK(x.grad()(2) == 1.0f);
    CHECK(std::isnan(x.grad()(3)));
  }

  TEST_CASE("silu records one entry, nothing under NoGradGuard, and frees it after backward") {
    Tensor x(Array{0.5f, -0.5f}, true);
    const std::size_t before = autograd::tape().size();
    {
      autograd::NoGradGuard no_grad;
      ops::silu(x);
      CHECK(autograd::tape().size() == before);
    }
    Tensor loss = ops::sum(ops::silu(x));
    CHECK(autograd::tape().size() == before + 2);
    loss.backward();
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
