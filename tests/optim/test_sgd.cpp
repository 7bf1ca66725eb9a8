// tests/optim/test_sgd.cpp: SGD with dense and row-sparse gradients (PyTorch's torch.optim.SGD).
#include <doctest/doctest.h>

#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "golden_optim.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
void check_sgd_parity(const SGDOptions& options, const float (&expected)[5][6]) {
  Parameter p(golden::array(golden::kTheta0, {2, 3}));
  SGD opt({p}, options);
  for (int s = 0; s < 5; ++s) {
    p.set_grad(golden::array(golden::kGrads[s], {2, 3}));
    opt.step();
    CHECK_MESSAGE(all_close(p.data(), golden::array(expected[s], {2, 3}), golden::kAtol, 1e-6),
                  "after step " << s + 1);
  }
}

Parameter table() { return Parameter(Array{{1.f, 1.f}, {2.f, 2.f}, {3.f, 3.f}, {4.f, 4.f}}); }
}  // namespace

TEST_SUITE("optim.sgd") {
  TEST_CASE("momentum and Nesterov momentum match the values worked out in double") {
    SUBCASE("momentum 0.9") {
      Parameter p(Array{1.f});
      SGD opt({p}, SGDOptions(0.1).momentum(0.9));
      std::vector<float> theta;
      for (int s = 0; s < 3; ++s) {
        p.set_grad(Array{0.5f});
        opt.step();
        theta.push_back(p.data()(0));
      }
      CHECK(theta[0] == doctest::Approx(0.95).epsilon(1e-6));
      CHECK(theta[1] == doctest::Approx(0.855).epsilon(1e-6));
      CHECK(theta[2] == doctest::Approx(0.7195).epsilon(1e-6));
    }
    SUBCASE("nesterov") {
      Parameter p(Array{1.f});
      SGD opt({p}, SGDOptions(0.1).momentum(0.9).nesterov(true));
      p.set_grad(Array{0.5f});
      opt.step();
      CHECK(p.data()(0) == doctest::Approx(0.905).epsilon(1e-6));
      p.set_grad(Array{0.5f});
      opt.step();
      CHECK(p.data()(0) == doctest::Approx(0.7695).epsilon(1e-6));
    }
  }

  TEST_CASE("five steps with random gradients match PyTorch for SGD variants") {
    SUBCASE("plain") { check_sgd_parity(SGDOptions(0.1), golden::k_sgd_plain); }
    SUBCASE("momentum, dampening, weight decay") {
      check_sgd_parity(SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01),
                       golden::k_sgd_momentum_dampening_wd);
    }
    SUBCASE("nesterov, weight decay") {
      check_sgd_parity(SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01),
                       golden::k_sgd_nesterov_wd);
    }
    SUBCASE("momentum, maximize") {
      check_sgd_parity(SGDOptions(0.1).momentum(0.5).maximize(true),
                       golden::k_sgd_momentum_maximize);
    }
  }

  TEST_CASE(
      "the buffer starts as a copy of the gradient: dampening is not applied at the first step") {
    Parameter p(Array{1.f});
    SGD opt({p}, SGDOptions(1.0).momentum(0.5).dampening(0.5));
    p.set_grad(Array{0.25f});
    opt.step();
    CHECK(opt.state(p)->momentum_buffer(0) == 0.25f);
    p.set_grad(Array{0.25f});
    opt.step();
    CHECK(opt.state(p)->momentum_buffer(0) == 0.25f * 0.5f + 0.5f * 0.25f);
  }

  TEST_CASE("maximize flips the gradient's sign, and weight decay keeps pulling towards zero") {
    Parameter up(Array{2.f}), down(Array{2.f});
    SGD a({up}, SGDOptions(0.1).weight_decay(0.5).maximize(true));
    SGD b({down}, SGDOptions(0.1).weight_decay(0.5));
    up.set_grad(Array{1.f});
    down.set_grad(Array{-1.f});
    a.step();
    b.step();
    CHECK(bit_equal(up.data(), down.data()));
    CHECK(up.data()(0) == doctest::Approx(2.0 - 0.1 * (-1.0 + 0.5 * 2.0)).epsilon(1e-6));
  }

  TEST_CASE("without momentum no state is kept") {
    Parameter p(Array{1.f});
    SGD opt({p}, SGDOptions(0.1));
    p.set_grad(Array{1.f});
    opt.step();
    CHECK(opt.state(p) == nullptr);
    CHECK(opt.state_dict().state.empty());
  }

  TEST_CASE("a row-sparse gradient moves only its rows and a repeated id adds twice") {
    Parameter lut = table();
    SGD opt({lut}, SGDOptions(0.5));
    lut.accumulate_grad(
        RowSparseGrad{IndexArray{2, 0, 2}, Array{{1.f, 2.f}, {4.f, 4.f}, {1.f, 0.f}}, {4, 2}});
    const std::uint64_t before = lut.version();
    opt.step();
    CHECK(bit_equal(lut.data(), Array{{-1.f, -1.f}, {2.f, 2.f}, {2.f, 2.f}, {4.f, 4.f}}));
    CHECK(lut.version() == before + 1);
  }

  TEST_CASE("with momentum a row-sparse gradient steps exactly like its dense equivalent") {
    Parameter sparse = table(), dense = table();
    SGD a({sparse}, SGDOptions(0.1).momentum(0.9).nesterov(true).maximize(true));
    SGD b({dense}, SGDOptions(0.1).momentum(0.9).nesterov(true).maximize(true));
    for (int s = 0; s < 3; ++s) {
      const RowSparseGrad g{IndexArray{std::int64_t(s % 4), 3, 3},
                            Array{{1.f, -1.f}, {0.5f, 0.25f}, {0.125f, 2.f}},
                            {4, 2}};
      sparse.accumulate_grad(g);
      dense.set_grad(g.to_dense());
      a.step();
      b.step();
      a.zero_grad();
    }
    CHECK(bit_equal(sparse.data(), dense.data()));
    CHECK(bit_equal(a.state(sparse)->momentum_buffer, b.state(dense)->momentum_buffer));
  }

  TEST_CASE("weight decay with a row-sparse gradient fails as in PyTorch, changing nothing") {
    Parameter first(Array{1.f}), lut = table();
    lut.set_name("lut.weight");
    SGD opt({first, lut}, SGDOptions(0.1).weight_decay(0.01));
    first.set_grad(Array{1.f});
    lut.accumulate_grad(RowSparseGrad{IndexArray{1}, Array{{1.f, 1.f}}, {4, 2}});
    CHECK_THROWS_WITH_AS(
        opt.step(),
        doctest::Contains("add(sparse, dense) is not supported. Use add(dense, sparse) instead. | "
                          "SGD: weight_decay needs a dense gradient for 'lut.weight'"),
        TypeError);
    CHECK(first.data()(0) == 1.f);
    CHECK(bit_equal(lut.data(), table().data()));
  }

  TEST_CASE("a hand-made row-sparse gradient with an id out of range is refused") {
    Parameter lut = table();
    SGD opt({lut}, SGDOptions(0.1));
    lut.accumulate_grad(RowSparseGrad{IndexArray{1, 7}, Array{{1.f, 1.f}, {1.f, 1.f}}, {4, 2}});
    CHECK_THROWS_WITH_AS(opt.step(), doctest::Contains("in [0, 4), got 7 at position 1"),
                         IndexError);
    CHECK(bit_equal(lut.data(), table().data()));
  }

  TEST_CASE("invalid hyper-parameters are refused with PyTorch's texts") {
    Parameter p(Array{1.f});
    CHECK_THROWS_WITH_AS(SGD({p}, SGDOptions(-0.5)),
                         doctest::Contains("Invalid learning rate: -0.5"), ValueError);
    CHECK_THROWS_WITH_AS(SGD({p}, SGDOptions().momentum(-0.9)),
                         doctest::Contains("Invalid momentum value: -0.9"), ValueError);
    CHECK_THROWS_WITH_AS(SGD({p}, SGDOptions().weight_decay(-1.0)),
                         doctest::Contains("Invalid weight_decay value: -1.0"), ValueError);
    CHECK_THROWS_WITH_AS(
        SGD({p}, SGDOptions().nesterov(true)),
        doctest::Contains("Nesterov momentum requires a momentum and zero dampening"), ValueError);
    CHECK_THROWS_WITH_AS(
        SGD({p}, SGDOptions().momentum(0.9).dampening(0.1).nesterov(true)),
        doctest::Contains("Nesterov momentum requires a momentum and zero dampening"), ValueError);
    CHECK(SGDOptions().lr() == 1e-3);
  }

  TEST_CASE("a null gradient skips the parameter while the buffer of the others keeps going") {
    Parameter a(Array{1.f}), b(Array{1.f});
    SGD opt({a, b}, SGDOptions(0.1).momentum(0.9));
    a.set_grad(Array{1.f});
    b.set_grad(Array{1.f});
    opt.step();
    opt.zero_grad();
    b.set_grad(Array{0.f});
    const float a_before = a.data()(0), b_before = b.data()(0);
    opt.step();
    CHECK(a.data()(0) == a_before);
    CHECK(opt.state(a)->momentum_buffer(0) == 1.f);
    CHECK(b.data()(0) == doctest::Approx(b_before - 0.1 * 0.9));  // momentum alone still moves it
  }
}  // TEST_SUITE
