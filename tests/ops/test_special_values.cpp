// tests/ops/test_special_values.cpp: NaN and the infinities through the elementwise ops, forward
// and backward, as PyTorch 1.13 gives them: every op on -inf, -2, -0, +0, 0.5, 3, +inf and NaN,
// with an incoming gradient of 1 and then of NaN. A NaN that should stop a run must never be
// turned into a number on the way (relu once made NaN a 0). The goldens come from
// scripts/golden/special_values.py; the suite runs on every kernel set (ops.*). Zeros compare by
// value: -0 and +0 are equal here, as they are to every later op but division.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;

namespace {
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
  FAIL("no such op in the table: ", op);
  return x;
}

// NaN matches NaN, an infinity the same infinity, a finite value within 4e-6 of the golden's size
// (the fast kernels' exp and tanh are a few roundings from libm's).
bool same(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::isfinite(got) && std::abs(got - want) <= 4e-6f * std::max(1.0f, std::abs(want));
}

std::string show(const std::vector<float>& v) {
  std::string s;
  for (float f : v) s += (s.empty() ? "" : ", ") + std::to_string(f);
  return "{" + s + "}";
}
}  // namespace

TEST_SUITE("ops.special_values") {
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
      CAPTURE(show(got_y));
      CAPTURE(show(got_dx));
      for (std::size_t i = 0; i < kX.size(); ++i) {
        CAPTURE(kX[i]);
        CHECK(same(got_y[i], g.y[i]));
        CHECK(same(got_dx[i], g.dx[i]));
      }
    }
  }
}
