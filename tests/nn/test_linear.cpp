// tests/nn/test_linear.cpp: the Linear module (PyTorch's nn.Linear) — layout, initialisation bounds
// and draw order, values, gradcheck, the shape error naming the module, printing.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
struct Head : Module {
  Head() : out(register_module("out", std::make_shared<Linear>(16, 11))) {}
  std::shared_ptr<Linear> out;
};
}  // namespace

TEST_SUITE("nn.linear") {
  TEST_CASE("weight is (out_features, in_features), bias is (out_features), in PyTorch's order") {
    Linear lin(16, 11);
    CHECK(lin.weight.shape() == Shape{11, 16});
    CHECK(lin.bias.shape() == Shape{11});
    std::vector<std::string> names;
    for (const auto& [n, p] : lin.named_parameters()) names.push_back(n);
    CHECK(names == std::vector<std::string>{"weight", "bias"});
    CHECK(lin.weight.requires_grad());
    CHECK(lin.bias.requires_grad());
  }

  TEST_CASE("without a bias no 'bias' is registered") {
    Linear lin(LinearOptions(3, 2).bias(false));
    CHECK(lin.parameters().size() == 1);
    CHECK_FALSE(lin.bias.defined());
    CHECK(lin.repr() == "Linear(in_features=3, out_features=2, bias=False)");
    const Tensor y = lin.forward(Tensor(Array{{1.f, 2.f, 3.f}}));
    CHECK(all_close(y.data(),
                    Array{{lin.weight.data()(0, 0) * 1 + lin.weight.data()(0, 1) * 2 +
                               lin.weight.data()(0, 2) * 3,
                           lin.weight.data()(1, 0) * 1 + lin.weight.data()(1, 1) * 2 +
                               lin.weight.data()(1, 2) * 3}},
                    1e-5));
  }

  TEST_CASE("initialisation draws U(-1/sqrt(in), 1/sqrt(in)), weight first, then bias") {
    auto gen = std::make_shared<Generator>(123);
    Linear lin(LinearOptions(16, 11), gen);
    const double bound = 1.0 / std::sqrt(16.0);
    for (float w : lin.weight.data()) CHECK(std::abs(w) <= bound);
    for (float b : lin.bias.data()) CHECK(std::abs(b) <= bound);
    Generator replay(123);
    Array w = Array::from_shape({11, 16}), b = Array::from_shape({11});
    uniform_(w, -bound, bound, &replay);
    uniform_(b, -bound, bound, &replay);
    CHECK(bit_equal(lin.weight.data(), w));
    CHECK(bit_equal(lin.bias.data(), b));
    // and the values spread over the interval
    CHECK(*std::max_element(lin.weight.data().begin(), lin.weight.data().end()) > 0.8 * bound);
    CHECK(*std::min_element(lin.weight.data().begin(), lin.weight.data().end()) < -0.8 * bound);
  }

  TEST_CASE("reset_parameters draws again from the module's generator and bumps the versions") {
    auto gen = std::make_shared<Generator>(5);
    Linear lin(LinearOptions(4, 3), gen);
    const Array before = lin.weight.data();
    const std::uint64_t v = lin.weight.version();
    lin.reset_parameters();
    CHECK_FALSE(bit_equal(lin.weight.data(), before));
    CHECK(lin.weight.version() > v);
  }

  TEST_CASE("the same seed gives the same layer") {
    Linear a(LinearOptions(8, 5), std::make_shared<Generator>(77)),
        b(LinearOptions(8, 5), std::make_shared<Generator>(77));
    CHECK(bit_equal(a.weight.data(), b.weight.data()));
    CHECK(bit_equal(a.bias.data(), b.bias.data()));
  }

  TEST_CASE("forward computes x W^T + b over any leading dimensions") {
    Linear lin(2, 3);
    {
      autograd::NoGradGuard no_grad;
      lin.weight.mutable_data() = Array{{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}};
      lin.bias.mutable_data() = Array{0.5f, -1.f, 0.f};
    }
    const Tensor x(Array{{{1.f, 1.f}, {2.f, 0.f}}, {{0.f, -1.f}, {1.f, 2.f}}});  // (2, 2, 2)
    const Tensor y = lin.forward(x);
    CHECK(y.shape() == Shape{2, 2, 3});
    CHECK(all_close(y.data(), Array{{{3.5f, 6.f, 11.f}, {2.5f, 5.f, 10.f}},
                                    {{-1.5f, -5.f, -6.f}, {5.5f, 10.f, 17.f}}}));
  }

  TEST_CASE("the gradients of x, weight and bias match finite differences") {
    Generator g(3);
    Linear lin(LinearOptions(4, 3), std::make_shared<Generator>(1));
    const Tensor x(randn({2, 2, 4}, &g), true);
    const auto r = gradcheck([&](const std::vector<Tensor>& t) { return lin.forward(t[0]); },
                             {x, lin.weight, lin.bias});
    CHECK_MESSAGE(r.ok, r);
  }

  TEST_CASE("a wrong last dimension names the module, both matrices and the input's shape") {
    Head head;
    CHECK_THROWS_WITH_AS(
        head.out->forward(Tensor(xt::zeros<float>({2, 5, 8}))),
        doctest::Contains("mat1 and mat2 shapes cannot be multiplied (10x8 and 16x11) | Linear "
                          "'out': expected input with last dimension 16, got shape (2, 5, 8)"),
        ShapeError);
  }

  TEST_CASE("negative sizes are refused") {
    CHECK_THROWS_WITH_AS(Linear(-1, 3),
                         doctest::Contains("Trying to create tensor with negative dimension -1"),
                         ValueError);
  }

  TEST_CASE(
      "records one entry, nothing under NoGradGuard, and leaves an empty tape after backward") {
    Linear lin(3, 2);
    const Tensor x(xt::ones<float>({4, 3}));
    {
      autograd::NoGradGuard no_grad;
      lin.forward(x);
      CHECK(autograd::tape().empty());
    }
    const Tensor y = lin.forward(x);
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "linear");
    ops::sum(y).backward();
    CHECK(autograd::tape().empty());
    CHECK(all_close(lin.bias.grad(), Array{4.f, 4.f}));
  }

  TEST_CASE("printing") {
    CHECK(Linear(16, 11).repr() == "Linear(in_features=16, out_features=11, bias=True)");
    CHECK(Head().repr() == "Head(\n  (out): Linear(in_features=16, out_features=11, bias=True)\n)");
  }
}  // TEST_SUITE
