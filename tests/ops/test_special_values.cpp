// tests/ops/test_special_values.cpp: NaN and the infinities through the elementwise ops, forward
// and backward, as PyTorch 1.13 gives them: every elementwise op on -inf, -2, -0, +0, 0.5, 3,
// +inf and NaN, with an incoming gradient of 1 and then of NaN; softmax, log_softmax, layer norm
// and the row reductions on rows holding one special value each. A NaN that should stop a run must never be
// turned into a number on the way (relu once made NaN a 0). The goldens come from
// scripts/golden/special_values.py; the suite runs on every kernel set (ops.*). Zeros compare by
// value: -0 and +0 are equal here, as they are to every later op but division.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

namespace {
// A finite value within 4e-6 of the golden's size (testing::same_special): the fast kernels' exp
// and tanh are a few roundings from libm's.
constexpr float kTolerance = 4e-6f;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Golden {
  const char* op;
  const char* grad;  // the incoming gradient: "one" or "nan"
  std::vector<float> y, dx;
};

// torch 1.13.0a0
// x = {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}
const std::vector<float> kX = {-kInf, -2.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN};
const std::vector<Golden> kGoldens = {
    {"neg", "one", {kInf, 2.0f, 0.0f, -0.0f, -0.5f, -3.0f, -kInf, kNaN}, {-1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f}},
    {"neg", "nan", {kInf, 2.0f, 0.0f, -0.0f, -0.5f, -3.0f, -kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"add_scalar", "one", {-kInf, -0.5f, 1.5f, 1.5f, 2.0f, 4.5f, kInf, kNaN}, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}},
    {"add_scalar", "nan", {-kInf, -0.5f, 1.5f, 1.5f, 2.0f, 4.5f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"mul_scalar", "one", {-kInf, -4.0f, -0.0f, 0.0f, 1.0f, 6.0f, kInf, kNaN}, {2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f}},
    {"mul_scalar", "nan", {-kInf, -4.0f, -0.0f, 0.0f, 1.0f, 6.0f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"div_scalar", "one", {-kInf, -0.5f, -0.0f, 0.0f, 0.125f, 0.75f, kInf, kNaN}, {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f}},
    {"div_scalar", "nan", {-kInf, -0.5f, -0.0f, 0.0f, 0.125f, 0.75f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"rdiv_scalar", "one", {-0.0f, -1.0f, -kInf, kInf, 4.0f, 0.666666687f, 0.0f, kNaN}, {-0.0f, -0.5f, -kInf, -kInf, -8.0f, -0.222222239f, -0.0f, kNaN}},
    {"rdiv_scalar", "nan", {-0.0f, -1.0f, -kInf, kInf, 4.0f, 0.666666687f, 0.0f, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"exp", "one", {0.0f, 0.135335281f, 1.0f, 1.0f, 1.64872122f, 20.085537f, kInf, kNaN}, {0.0f, 0.135335281f, 1.0f, 1.0f, 1.64872122f, 20.085537f, kInf, kNaN}},
    {"exp", "nan", {0.0f, 0.135335281f, 1.0f, 1.0f, 1.64872122f, 20.085537f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"log", "one", {kNaN, kNaN, -kInf, -kInf, -0.693147182f, 1.09861231f, kInf, kNaN}, {-0.0f, -0.5f, -kInf, kInf, 2.0f, 0.333333343f, 0.0f, kNaN}},
    {"log", "nan", {kNaN, kNaN, -kInf, -kInf, -0.693147182f, 1.09861231f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"sqrt", "one", {kNaN, kNaN, -0.0f, 0.0f, 0.707106769f, 1.73205078f, kInf, kNaN}, {kNaN, kNaN, -kInf, kInf, 0.707106769f, 0.288675129f, 0.0f, kNaN}},
    {"sqrt", "nan", {kNaN, kNaN, -0.0f, 0.0f, 0.707106769f, 1.73205078f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"pow_3", "one", {-kInf, -8.0f, -0.0f, 0.0f, 0.125f, 27.0f, kInf, kNaN}, {kInf, 12.0f, 0.0f, 0.0f, 0.75f, 27.0f, kInf, kNaN}},
    {"pow_3", "nan", {-kInf, -8.0f, -0.0f, 0.0f, 0.125f, 27.0f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"pow_half", "one", {kNaN, kNaN, -0.0f, 0.0f, 0.707106769f, 1.73205078f, kInf, kNaN}, {kNaN, kNaN, -kInf, kInf, 0.707106769f, 0.288675129f, 0.0f, kNaN}},
    {"pow_half", "nan", {kNaN, kNaN, -0.0f, 0.0f, 0.707106769f, 1.73205078f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"tanh", "one", {-1.0f, -0.964027584f, -0.0f, 0.0f, 0.462117165f, 0.995054781f, 1.0f, kNaN}, {0.0f, 0.070650816f, 1.0f, 1.0f, 0.786447704f, 0.00986598153f, 0.0f, kNaN}},
    {"tanh", "nan", {-1.0f, -0.964027584f, -0.0f, 0.0f, 0.462117165f, 0.995054781f, 1.0f, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"relu", "one", {0.0f, 0.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}, {0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f}},
    {"relu", "nan", {0.0f, 0.0f, -0.0f, 0.0f, 0.5f, 3.0f, kInf, kNaN}, {0.0f, 0.0f, 0.0f, 0.0f, kNaN, kNaN, kNaN, kNaN}},
    {"sigmoid", "one", {0.0f, 0.119202919f, 0.5f, 0.5f, 0.622459352f, 0.952574134f, 1.0f, kNaN}, {0.0f, 0.104993582f, 0.25f, 0.25f, 0.23500371f, 0.0451766551f, 0.0f, kNaN}},
    {"sigmoid", "nan", {0.0f, 0.119202919f, 0.5f, 0.5f, 0.622459352f, 0.952574134f, 1.0f, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"gelu", "one", {kNaN, -0.0455000997f, 0.0f, 0.0f, 0.345731199f, 2.99595022f, kInf, kNaN}, {kNaN, -0.0852318704f, 0.5f, 0.5f, 0.86749506f, 1.01194561f, kNaN, kNaN}},
    {"gelu", "nan", {kNaN, -0.0455000997f, 0.0f, 0.0f, 0.345731199f, 2.99595022f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"gelu_tanh", "one", {kNaN, -0.0454022884f, -0.0f, 0.0f, 0.345714003f, 2.99636269f, kInf, kNaN}, {kNaN, -0.0860992223f, 0.5f, 0.5f, 0.86736989f, 1.01158428f, kNaN, kNaN}},
    {"gelu_tanh", "nan", {kNaN, -0.0454022884f, -0.0f, 0.0f, 0.345714003f, 2.99636269f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"silu", "one", {kNaN, -0.238405839f, -0.0f, 0.0f, 0.311229676f, 2.85772252f, kInf, kNaN}, {kNaN, -0.0907842517f, 0.5f, 0.5f, 0.739961207f, 1.08810413f, kNaN, kNaN}},
    {"silu", "nan", {kNaN, -0.238405839f, -0.0f, 0.0f, 0.311229676f, 2.85772252f, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"relu_squared", "one", {0.0f, 0.0f, 0.0f, 0.0f, 0.25f, 9.0f, kInf, kNaN}, {0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 6.0f, kInf, kNaN}},
    {"relu_squared", "nan", {0.0f, 0.0f, 0.0f, 0.0f, 0.25f, 9.0f, kInf, kNaN}, {0.0f, 0.0f, 0.0f, 0.0f, kNaN, kNaN, kNaN, kNaN}},
};

// The row ops: each of six rows of four holds one special value (or none); the gradient coming
// in is kRowGrad on each output row (or kRowGrad[0] on each value of a reduced row).
struct RowGolden {
  const char* op;
  std::vector<float> y, dx;
};
const std::vector<std::vector<float>> kRows = {{1.0f, 2.0f, 3.0f, 4.0f},     {1.0f, kInf, 3.0f, 4.0f},
                                               {1.0f, -kInf, 3.0f, 4.0f},   {1.0f, kNaN, 3.0f, 4.0f},
                                               {kInf, kInf, 3.0f, 4.0f},    {-kInf, -kInf, -kInf, -kInf}};
const std::vector<float> kRowGrad = {0.5f, -1.0f, 2.0f, 0.25f};
const std::vector<RowGolden> kRowGoldens = {
    {"softmax", {0.0320586041f, 0.0871443227f, 0.236882836f, 0.643914282f, kNaN, kNaN, kNaN, kNaN, 0.0351190232f, 0.0f, 0.25949645f, 0.705384493f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {-0.00203986373f, -0.136261404f, 0.340251595f, -0.201950327f, kNaN, kNaN, kNaN, kNaN, -0.00747678941f, -0.0f, 0.333998263f, -0.326521456f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"log_softmax", {-3.4401896f, -2.4401896f, -1.44018972f, -0.440189689f, kNaN, kNaN, kNaN, kNaN, -3.34901237f, -kInf, -1.34901226f, -0.349012256f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {0.443897426f, -1.15250254f, 1.58545506f, -0.876850009f, kNaN, kNaN, kNaN, kNaN, 0.43854171f, -1.0f, 1.54588127f, -0.984422863f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"layer_norm", {-1.34163547f, -0.447211862f, 0.447211802f, 1.34163547f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, {0.357767075f, -1.18511212f, 1.29691505f, -0.469570041f, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}},
    {"sum_rows", {10.0f, kInf, -kInf, kNaN, kInf, -kInf}, {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}},
    {"mean_rows", {2.5f, kInf, -kInf, kNaN, kInf, -kInf}, {0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f}},
    {"max_rows", {4.0f, kInf, 4.0f, kNaN, kInf, -kInf}, {0.0f, 0.0f, 0.0f, 0.5f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.0f, 0.5f, 0.0f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f}},
};


Tensor apply(const std::string& op, const Tensor& x) {
  if (op == "neg") return -x;
  if (op == "add_scalar") return x + 1.5;
  if (op == "mul_scalar") return x * 2.0;
  if (op == "div_scalar") return x / 4.0;
  if (op == "rdiv_scalar") return 2.0 / x;
  if (op == "exp") return ops::exp(x);
  if (op == "log") return ops::log(x);
  if (op == "sqrt") return ops::sqrt(x);
  if (op == "pow_3") return ops::pow(x, 3.0);
  if (op == "pow_half") return ops::pow(x, 0.5);
  if (op == "tanh") return ops::tanh(x);
  if (op == "relu") return ops::relu(x);
  if (op == "sigmoid") return ops::sigmoid(x);
  if (op == "gelu") return ops::gelu(x);
  if (op == "gelu_tanh") return ops::gelu(x, "tanh");
  if (op == "silu") return ops::silu(x);
  if (op == "relu_squared") return ops::relu_squared(x);
  if (op == "softmax") return ops::softmax(x, -1);
  if (op == "log_softmax") return ops::log_softmax(x, -1);
  if (op == "layer_norm") return ops::layer_norm(x, {4});
  if (op == "sum_rows") return ops::sum(x, -1);
  if (op == "mean_rows") return ops::mean(x, -1);
  if (op == "max_rows") return ops::max(x, -1);
  FAIL("no such op in the table: ", op);
  return x;
}

}  // namespace

TEST_SUITE("ops.special_values") {
  TEST_CASE("softmax, layer norm and the reductions give PyTorch's values and gradients on rows "
            "holding NaN or an infinity") {
    Array xa = Array::from_shape({kRows.size(), 4});
    for (std::size_t r = 0; r < kRows.size(); ++r)
      for (std::size_t c = 0; c < 4; ++c) xa(r, c) = kRows[r][c];
    for (const RowGolden& g : kRowGoldens) {
      const std::string op = g.op;
      CAPTURE(op);
      const Tensor x(xa, /*requires_grad=*/true);
      const Tensor y = apply(op, x);
      Array seed = Array::from_shape(y.shape());
      for (std::size_t i = 0; i < seed.size(); ++i)
        seed.data()[i] = y.dim() == 2 ? kRowGrad[i % 4] : kRowGrad[0];
      y.backward(std::move(seed));
      const std::vector<float> got_y(y.data().begin(), y.data().end()),
          got_dx(x.grad().begin(), x.grad().end());
      CAPTURE(testing::show(got_y));
      CAPTURE(testing::show(got_dx));
      REQUIRE(got_y.size() == g.y.size());
      for (std::size_t i = 0; i < got_y.size(); ++i) {
        CAPTURE(i);
        CHECK(testing::same_special(got_y[i], g.y[i], kTolerance));
      }
      for (std::size_t i = 0; i < got_dx.size(); ++i) {
        CAPTURE(i);
        CHECK(testing::same_special(got_dx[i], g.dx[i], kTolerance));
      }
    }
  }

  TEST_CASE("the elementwise ops give PyTorch's values and gradients on NaN and the infinities") {
    for (const Golden& g : kGoldens) {
      const std::string op = g.op, incoming = g.grad;
      CAPTURE(op);
      CAPTURE(incoming);
      Array xa = Array::from_shape({kX.size()});
      std::copy(kX.begin(), kX.end(), xa.begin());
      const Tensor x(std::move(xa), /*requires_grad=*/true);
      const Tensor y = apply(g.op, x);
      Array seed = Array::from_shape({kX.size()});
      seed.fill(std::string(g.grad) == "nan" ? kNaN : 1.0f);
      y.backward(std::move(seed));
      const std::vector<float> got_y(y.data().begin(), y.data().end()),
          got_dx(x.grad().begin(), x.grad().end());
      CAPTURE(testing::show(got_y));
      CAPTURE(testing::show(got_dx));
      for (std::size_t i = 0; i < kX.size(); ++i) {
        CAPTURE(kX[i]);
        CHECK(testing::same_special(got_y[i], g.y[i], kTolerance));
        CHECK(testing::same_special(got_dx[i], g.dx[i], kTolerance));
      }
    }
  }
}
