// tests/ops/test_elementwise.cpp: values, gradients (gradcheck, broadcast included), errors.
#include <doctest/doctest.h>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;
using tapegrad::testing::input;

namespace {
Tensor positive(const Shape& shape, std::uint64_t seed) {
  Generator g(seed);
  return Tensor(uniform(shape, 0.5, 2.0, &g), true);
}
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
void check_gradients(const Fn& fn, const std::vector<Tensor>& inputs) {
  const GradcheckResult r = gradcheck(fn, inputs);
  CHECK_MESSAGE(r.ok, r.message);
}
}  // namespace

TEST_SUITE("ops.elementwise") {
  TEST_CASE("binary ops compute elementwise values and broadcast like NumPy") {
    Tensor a(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
    Tensor b(Array{10.f, 20.f, 30.f});
    CHECK(all_close((a + b).data(), Array{{11.f, 22.f, 33.f}, {14.f, 25.f, 36.f}}));
    CHECK(all_close((a - b).data(), Array{{-9.f, -18.f, -27.f}, {-6.f, -15.f, -24.f}}));
    CHECK(all_close((a * b).data(), Array{{10.f, 40.f, 90.f}, {40.f, 100.f, 180.f}}));
    CHECK(all_close((b / a).data(), Array{{10.f, 10.f, 10.f}, {2.5f, 4.f, 5.f}}));
    Array column = {1.f, 2.f};
    column.reshape({2, 1});
    Tensor col(column);
    CHECK(all_close((a * col).data(), Array{{1.f, 2.f, 3.f}, {8.f, 10.f, 12.f}}));
  }

  TEST_CASE("scalar forms cast the scalar to float once, as PyTorch does") {
    Tensor a(Array{1.f, 2.f});
    CHECK(all_close((a + 1.5).data(), Array{2.5f, 3.5f}));
    CHECK(all_close((1.5 - a).data(), Array{0.5f, -0.5f}));
    CHECK(all_close((a * 0.1).data(), Array{0.1f, 0.2f}));
    CHECK(all_close((2.0 / a).data(), Array{2.f, 1.f}));
    CHECK(all_close((a / 4.0).data(), Array{0.25f, 0.5f}));
    CHECK(all_close((-a).data(), Array{-1.f, -2.f}));
    CHECK((a * 0.1).data()(0) == 1.f * static_cast<float>(0.1));
  }

  TEST_CASE("unary ops compute their values") {
    Tensor a(Array{-1.f, 0.f, 2.f});
    CHECK(all_close(ops::exp(a).data(), Array{std::exp(-1.f), 1.f, std::exp(2.f)}));
    CHECK(all_close(ops::relu(a).data(), Array{0.f, 0.f, 2.f}));
    CHECK(all_close(ops::tanh(a).data(), Array{std::tanh(-1.f), 0.f, std::tanh(2.f)}));
    CHECK(all_close(ops::sigmoid(a).data(),
                    Array{1.f / (1.f + std::exp(1.f)), 0.5f, 1.f / (1.f + std::exp(-2.f))}));
    Tensor p(Array{1.f, 4.f});
    CHECK(all_close(ops::sqrt(p).data(), Array{1.f, 2.f}));
    CHECK(all_close(ops::log(p).data(), Array{0.f, std::log(4.f)}));
    CHECK(all_close(ops::pow(p, 1.5).data(), Array{1.f, 8.f}));
  }

  TEST_CASE("binary ops pass gradcheck, including broadcast operands") {
    const std::vector<std::pair<Shape, Shape>> cases = {
        {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1, 3}, {4, 1}}, {{3}, {}}, {{1, 3}, {2, 1}}};
    for (const auto& [sa, sb] : cases) {
      CAPTURE(str(sa));
      CAPTURE(str(sb));
      Tensor a = input(sa, 1), b = input(sb, 2);
      check_gradients([](const std::vector<Tensor>& t) { return t[0] + t[1]; }, {a, b});
      check_gradients([](const std::vector<Tensor>& t) { return t[0] - t[1]; }, {a, b});
      check_gradients([](const std::vector<Tensor>& t) { return t[0] * t[1]; }, {a, b});
      Tensor pb = positive(sb, 3);
      check_gradients([](const std::vector<Tensor>& t) { return t[0] / t[1]; }, {a, pb});
    }
  }

  TEST_CASE("scalar and unary ops pass gradcheck") {
    Tensor a = input({2, 3}, 4);
    Tensor p = positive({2, 3}, 5);
    check_gradients([](const std::vector<Tensor>& t) { return t[0] + 2.0; }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return t[0] - 2.0; }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return 2.0 - t[0]; }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return t[0] * 3.0; }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return t[0] / 3.0; }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return 3.0 / t[0]; }, {p});
    check_gradients([](const std::vector<Tensor>& t) { return -t[0]; }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::exp(t[0]); }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::log(t[0]); }, {p});
    check_gradients([](const std::vector<Tensor>& t) { return ops::sqrt(t[0]); }, {p});
    check_gradients([](const std::vector<Tensor>& t) { return ops::pow(t[0], 3.0); }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::pow(t[0], -0.5); }, {p});
    check_gradients([](const std::vector<Tensor>& t) { return ops::tanh(t[0]); }, {a});
    check_gradients([](const std::vector<Tensor>& t) { return ops::sigmoid(t[0]); }, {a});
    // relu: keep inputs away from the kink at 0, where the derivative does not exist
    Tensor r(Array{{-1.f, 0.5f, 2.f}, {0.3f, -0.2f, -3.f}}, true);
    check_gradients([](const std::vector<Tensor>& t) { return ops::relu(t[0]); }, {r});
  }

  TEST_CASE(
      "unary backwards that rewrite the output's gradient in place leave every other gradient "
      "intact") {
    // x feeds a chain of scalar and unary ops twice; each backward scales its dy in place and
    // hands it on, so a shared buffer would show as a wrong sum. x.grad = e^x * 2 - 1 / 4 + 3.
    Tensor x(Array{0.5f, -1.f, 2.f}, true);
    Tensor y = ops::exp(x) * 2.0;
    Tensor z = -(x / 4.0);
    Tensor loss = ops::sum(y + z + x * 3.0);
    loss.backward();
    CHECK(all_close(x.grad(), xt::exp(Array{0.5f, -1.f, 2.f}) * 2.f - 0.25f + 3.f));
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("masked_fill fills where the broadcast mask is true and blocks the gradient there") {
    Tensor a(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}, true);
    const Mask m = {{false, true, false}};
    Tensor y = ops::masked_fill(a, m, -1e9);
    CHECK(all_close(y.data(), Array{{1.f, -1e9f, 3.f}, {4.f, -1e9f, 6.f}}));
    ops::sum(y).backward();
    CHECK(all_close(a.grad(), Array{{1.f, 0.f, 1.f}, {1.f, 0.f, 1.f}}));
    Tensor b = input({2, 3}, 6);
    check_gradients([&m](const std::vector<Tensor>& t) { return ops::masked_fill(t[0], m, 0.0); },
                    {b});
    CHECK_THROWS_WITH_AS(
        ops::masked_fill(a, Mask{true, false}, 0.0),
        doctest::Contains(
            "masked_fill: mask of shape (2,) does not broadcast to the tensor's shape (2, 3)"),
        ShapeError);
  }

  TEST_CASE("shapes that cannot broadcast name the op and both shapes, with PyTorch's text first") {
    Tensor a(Array::from_shape({2, 3}));
    Tensor b(Array::from_shape({2, 4}));
    CHECK_THROWS_WITH_AS(
        ops::mul(a, b),
        doctest::Contains(
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
            "dimension 1 | mul: shapes (2, 3) and (2, 4) cannot be broadcast"),
        ShapeError);
    CHECK_THROWS_AS(ops::add(a, b), ShapeError);
    CHECK_THROWS_AS(ops::sub(a, b), ShapeError);
    CHECK_THROWS_AS(ops::div(a, b), ShapeError);
  }

  TEST_CASE(
      "elementwise ops record nothing under NoGradGuard, and leave an empty tape after backward") {
    Tensor a = input({3}, 7);
    {
      autograd::NoGradGuard no_grad;
      Tensor y = ops::exp(a * a + 1.0);
      CHECK(autograd::tape().empty());
    }
    ops::sum(ops::exp(a * a + 1.0)).backward();
    CHECK(autograd::tape().empty());
  }

}  // TEST_SUITE
