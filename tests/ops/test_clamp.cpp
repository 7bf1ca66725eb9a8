// tests/ops/test_clamp.cpp: clamp, torch.clamp(x, min, max): values by hand, PyTorch goldens,
// gradcheck, NaN and the infinities (in x and in the bounds), min > max, the error, the tape.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <tapegrad/autograd/tape.hpp>
#include <tapegrad/ops/clamp.hpp>
#include <tapegrad/ops/reduce.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::values;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::nanf("");

// torch.clamp(x, -0.5, 0.8) and d(sum(g * y))/dx, from scripts/golden/clamp.py with torch 1.13.0a0.
const std::vector<float> kX = {2.31149411f,  -0.440143347f, -3.26818419f,  0.852646887f,
                               -1.62678361f, -2.09789324f,  0.605020285f,  1.25703955f,
                               -1.07888639f, -0.605015278f, -0.894953012f, 0.273054719f};
const std::vector<float> kG = {-0.856674612f, 1.10060418f,  -1.07118738f,  0.122701243f,
                               -0.566317499f, 0.373114645f, -0.891995311f, -1.50910771f,
                               0.370393544f,  1.45650256f,  0.939809918f,  0.774848819f};
const std::vector<float> kY = {0.800000012f, -0.440143347f, -0.5f, 0.800000012f,
                               -0.5f,        -0.5f,         0.605020285f, 0.800000012f,
                               -0.5f,        -0.5f,         -0.5f, 0.273054719f};
const std::vector<float> kDx = {0.0f, 1.10060418f, 0.0f, 0.0f, 0.0f, 0.0f,
                                -0.891995311f, 0.0f, 0.0f, 0.0f, 0.0f, 0.774848819f};

// Same value, NaN for NaN, and the sign of a zero.
void check_same(const Array& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got(i)));
    } else {
      CHECK(got(i) == want[i]);
      CHECK(std::signbit(got(i)) == std::signbit(want[i]));
    }
  }
}
}  // namespace

TEST_SUITE("ops.clamp") {
  TEST_CASE("clamp keeps x inside [min, max] and passes the gradient where x is inside") {
    Tensor x(Array{-2.0f, -1.0f, 0.25f, 1.0f, 3.0f}, true);
    Tensor y = ops::clamp(x, -1.0f, 1.0f);
    CHECK(testing::bit_equal(y.data(), Array{-1.0f, -1.0f, 0.25f, 1.0f, 1.0f}));
    y.backward(Array{10.0f, 20.0f, 30.0f, 40.0f, 50.0f});
    CHECK(testing::bit_equal(x.grad(), Array{0.0f, 20.0f, 30.0f, 40.0f, 0.0f}));  // bounds pass
  }

  TEST_CASE("clamp matches PyTorch's torch.clamp, values and gradients") {
    Tensor x(values({3, 4}, kX), true);
    Tensor y = ops::clamp(x, -0.5f, 0.8f);
    CHECK(all_close(y.data(), values({3, 4}, kY), 0.0, 0.0));
    y.backward(values({3, 4}, kG));
    CHECK(all_close(x.grad(), values({3, 4}, kDx), 0.0, 0.0));
  }

  TEST_CASE("clamp's gradient matches finite differences") {
    // away from the bounds, where a finite difference of step 1e-2 straddles both sides
    Tensor x = testing::input({3, 5}, 12, false);
    Array shifted = x.data();
    for (float& v : shifted)
      if (std::abs(std::abs(v) - 0.5f) < 0.05f) v += 0.1f;
    testing::check_gradients(
        [](const std::vector<Tensor>& t) { return ops::clamp(t[0], -0.5f, 0.5f); },
        {Tensor(shifted, true)});
  }

  TEST_CASE("clamp treats NaN, the infinities, a NaN bound and min > max as PyTorch does") {
    // PyTorch 1.13 (scripts/golden/clamp.py), the gradient for g = 1
    const std::vector<float> special = {-kInf, -2.0f, -1.0f, -0.5f, 0.0f, -0.0f,
                                        0.5f, 1.0f,  2.0f,  kInf,   kNaN};
    struct Case {
      std::optional<float> lo, hi;
      std::vector<float> y, dx;
    };
    const std::vector<float> all_nan(11, kNaN), none(11, 0.0f);
    const Case cases[] = {
        {-1.0f, 1.0f, {-1.0f, -1.0f, -1.0f, -0.5f, 0.0f, -0.0f, 0.5f, 1.0f, 1.0f, 1.0f, kNaN},
         {0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f}},
        {kNaN, 1.0f, all_nan, none},
        {-1.0f, kNaN, all_nan, none},
        {1.0f, -1.0f, {-1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, kNaN},
         none},
        {std::nullopt, 1.0f, {-kInf, -2.0f, -1.0f, -0.5f, 0.0f, -0.0f, 0.5f, 1.0f, 1.0f, 1.0f, kNaN},
         {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f}},
        {-1.0f, std::nullopt, {-1.0f, -1.0f, -1.0f, -0.5f, 0.0f, -0.0f, 0.5f, 1.0f, 2.0f, kInf, kNaN},
         {0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f}},
    };
    for (const Case& c : cases) {
      CAPTURE(c.lo.value_or(-kInf));
      CAPTURE(c.hi.value_or(kInf));
      Tensor x(values({11}, special), true);
      Tensor y = ops::clamp(x, c.lo, c.hi);
      check_same(y.data(), c.y);
      y.backward(Array(xt::ones<float>({11})));
      check_same(x.grad(), c.dx);
    }
  }

  TEST_CASE("clamp gives 0, not NaN, outside [min, max] when the incoming gradient is infinite") {
    Tensor x(Array{-3.0f, 0.0f, 3.0f}, true);
    ops::clamp(x, -1.0f, 1.0f).backward(Array{kInf, kInf, kInf});
    check_same(x.grad(), {0.0f, kInf, 0.0f});
  }

  TEST_CASE("clamp with neither bound is refused with PyTorch's message") {
    Tensor x(Array{1.0f, 2.0f});
    CHECK_THROWS_WITH_AS(ops::clamp(x, std::nullopt, std::nullopt),
                         doctest::Contains("At least one of 'min' or 'max' must not be None"),
                         ValueError);
  }

  TEST_CASE("clamp records one entry, nothing under NoGradGuard, and frees it after backward") {
    Tensor x(Array{0.5f, -1.5f}, true);
    const std::size_t before = autograd::tape().size();
    {
      autograd::NoGradGuard no_grad;
      ops::clamp(x, -1.0f, 1.0f);
      CHECK(autograd::tape().size() == before);
    }
    Tensor loss = ops::sum(ops::clamp(x, -1.0f, 1.0f));
    CHECK(autograd::tape().size() == before + 2);
    bool named = false;
    for (const auto& entry : autograd::tape().entries()) named = named || entry.op == "clamp";
    CHECK(named);
    loss.backward();
    CHECK(autograd::tape().empty());
  }
}  // TEST_SUITE
