// tests/optim/test_clip_grad.cpp: clip_grad_norm_ (PyTorch's torch.nn.utils.clip_grad_norm_).
#include <doctest/doctest.h>

#include <cmath>
#include <type_traits>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

// A Buffer cannot be clipped (nor trained): the call does not compile.
static_assert(!std::is_invocable_v<decltype(&clip_grad_norm_), const std::vector<Buffer>&, double,
                                   double, bool>);
static_assert(std::is_invocable_v<decltype(&clip_grad_norm_), const std::vector<Parameter>&, double,
                                  double, bool>);

TEST_SUITE("optim.clip_grad") {
  TEST_CASE("gradients (3, 4) and (12) have total norm 13 and are scaled by 1 / (13 + 1e-6)") {
    Parameter a(Array{0.f, 0.f}), b(Array{0.f});
    a.set_grad(Array{3.f, 4.f});
    b.set_grad(Array{12.f});
    const double total = clip_grad_norm_({a, b}, 1.0);
    CHECK(total == 13.0);
    const float coef = float(1.0 / (13.0 + 1e-6));
    CHECK(coef == doctest::Approx(0.0769230710).epsilon(1e-8));
    // torch 1.13 (scripts/golden/optim.py): a.grad = [0.230769217, 0.307692289], b.grad = [0.923076868]
    CHECK(all_close(a.grad(), Array{0.230769217f, 0.307692289f}, 0.0, 1e-6));
    CHECK(all_close(b.grad(), Array{0.923076868f}, 0.0, 1e-6));
    CHECK(a.grad()(0) == 3.f * coef);
  }

  TEST_CASE(
      "the infinity norm is the largest |g| and the returned norm is the one before clipping") {
    Parameter a(Array{0.f, 0.f}), b(Array{0.f});
    a.set_grad(Array{-3.f, 2.f});
    b.set_grad(Array{1.f});
    CHECK(clip_grad_norm_({a, b}, 1.5, INFINITY) == 3.0);
    CHECK(a.grad()(0) == -3.f * float(1.5 / (3.0 + 1e-6)));
    CHECK(clip_grad_norm_({a, b}, 1.0, 1.0) ==
          doctest::Approx(3.0).epsilon(1e-6));  // |−1.5| + 1 + 0.5
  }

  TEST_CASE("gradients under the limit are multiplied by exactly 1 and keep their values") {
    Parameter a(Array{0.f, 0.f});
    a.set_grad(Array{0.3f, -0.4f});
    CHECK(clip_grad_norm_({a}, 10.0) == doctest::Approx(0.5).epsilon(1e-6));
    CHECK(bit_equal(a.grad(), Array{0.3f, -0.4f}));
  }

  TEST_CASE("parameters without a gradient are ignored and none at all gives 0") {
    Parameter a(Array{0.f, 0.f}), none(Array{0.f});
    CHECK(clip_grad_norm_({a, none}, 1.0) == 0.0);
    a.set_grad(Array{6.f, 8.f});
    CHECK(clip_grad_norm_({a, none}, 5.0) == 10.0);
    CHECK_FALSE(none.has_grad());
    CHECK(a.grad()(1) == 8.f * float(5.0 / (10.0 + 1e-6)));
  }

  TEST_CASE(
      "a row-sparse gradient counts like its dense equivalent: repeated rows are summed first") {
    Parameter lut(Array{{0.f, 0.f}, {0.f, 0.f}, {0.f, 0.f}});
    lut.accumulate_grad(RowSparseGrad{IndexArray{1, 1}, Array{{3.f, 0.f}, {4.f, 0.f}}, {3, 2}});
    CHECK(clip_grad_norm_({lut}, 3.5) == 7.0);  // the dense gradient's row 1 is [7, 0]: not norm 5
    REQUIRE(lut.grad_is_sparse());
    CHECK(all_close(lut.grad_dense(), Array{{0.f, 0.f}, {3.5f, 0.f}, {0.f, 0.f}}, 1e-6, 1e-6));
  }

  TEST_CASE("error_if_nonfinite refuses a NaN or infinite total and leaves the gradients alone") {
    Parameter a(Array{0.f, 0.f});
    a.set_name("w");
    a.set_grad(Array{INFINITY, 1.f});
    CHECK_THROWS_WITH_AS(
        clip_grad_norm_({a}, 1.0, 2.0, true),
        doctest::Contains("The total norm of order 2.0 for gradients from `parameters` is "
                          "non-finite, so it cannot be clipped | clip_grad_norm_"),
        ValueError);
    CHECK(a.grad()(1) == 1.f);
    // Without the check, PyTorch scales by the non-finite coefficient anyway.
    CHECK(std::isinf(clip_grad_norm_({a}, 1.0)));
    CHECK(a.grad()(1) == 0.f);  // 1 · 1/(inf + 1e-6) = 0
  }

  TEST_CASE(
      "a negative or NaN max_norm is refused, naming it, and the gradients stay as they were") {
    // PyTorch 1.13 does not check: -1 / (5 + 1e-6) would flip the sign of every gradient.
    Parameter a(Array{0.f, 0.f});
    a.set_grad(Array{3.f, 4.f});
    CHECK_THROWS_WITH_AS(clip_grad_norm_({a}, -1.0),
                         doctest::Contains("clip_grad_norm_: expected max_norm >= 0, got -1.0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(clip_grad_norm_({a}, NAN),
                         doctest::Contains("expected max_norm >= 0, got nan"), ValueError);
    CHECK(bit_equal(a.grad(), Array{3.f, 4.f}));
    CHECK(clip_grad_norm_({a}, 0.0) == 5.0);  // 0 is allowed: it zeroes the gradients
    CHECK(bit_equal(a.grad(), Array{0.f, 0.f}));
  }
}  // TEST_SUITE
