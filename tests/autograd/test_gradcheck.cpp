// tests/autograd/test_gradcheck.cpp: gradcheck passes good gradients and reports bad ones.
#include <doctest/doctest.h>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

TEST_SUITE("autograd.gradcheck") {
  TEST_CASE("a correct gradient passes, and the inputs' gradients are left as found") {
    Generator g(1);
    Tensor x(randn({3, 4}, &g), true);
    x.set_grad(Array(xt::ones<float>({3, 4})));
    auto r = gradcheck([](const std::vector<Tensor>& t) { return ops::tanh(t[0]); }, {x});
    CHECK_MESSAGE(r.ok, r.message);
    CHECK(r.checked == 12);
    CHECK(x.grad()(0, 0) == 1.f);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("a wrong gradient fails and reports the worst element") {
    // y = x^2 recorded with a deliberately wrong backward (dx = dy * x instead of 2 x dy)
    auto bad_square = [](const std::vector<Tensor>& t) {
      const Tensor& x = t[0];
      Tensor y(Array(x.data() * x.data()));
      autograd::record("bad_square", y, {x}, {x},
                       [x](Array dy) { x.accumulate_grad(Array(dy * x.data())); });
      return y;
    };
    Tensor x(Array{1.f, 2.f, 3.f}, true);
    auto r = gradcheck(bad_square, {x});
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("gradcheck failed: input 0 at (") == 0);
    CHECK(std::abs(r.numeric - 2.0 * r.analytic) < 1e-2 * std::abs(r.numeric) + 1e-3);
  }

  TEST_CASE("a forgotten un-broadcast is caught by accumulate_grad, naming the op") {
    Tensor x(Array{1.f, 2.f, 3.f}, true);
    Tensor y(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
    autograd::record("forgot_sum_to_shape", y, {x}, {},
                     [x](Array dy) { x.accumulate_grad(dy, "forgot_sum_to_shape"); });
    CHECK_THROWS_WITH_AS(
        ops::sum(y).backward(),
        doctest::Contains(
            "forgot_sum_to_shape: produced a gradient of shape (2, 3) for tensor (3,)"),
        AutogradError);
  }

}  // TEST_SUITE
