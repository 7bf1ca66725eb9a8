// tests/optim/test_adam.cpp: Adam and AdamW (PyTorch's torch.optim.Adam and AdamW).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "golden_optim.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

// Adam's and AdamW's options are one list but two types: each setter returns the caller's type,
// and neither optimizer takes the other's options.
static_assert(!std::is_same_v<AdamOptions, AdamWOptions>);
static_assert(std::is_same_v<decltype(AdamWOptions().lr(0.1).betas({0.9, 0.99})), AdamWOptions&>);
static_assert(!std::is_constructible_v<Adam, std::vector<Parameter>, AdamWOptions>);
static_assert(!std::is_constructible_v<AdamW, std::vector<Parameter>, AdamOptions>);

namespace {
// θ after each of `steps` steps of `opt` on the one-element parameter p with the constant gradient g.
std::vector<float> constant_gradient_run(Optimizer& opt, const Parameter& p, float g, int steps) {
  std::vector<float> out;
  for (int s = 0; s < steps; ++s) {
    p.set_grad(Array{g});
    opt.step();
    out.push_back(p.data()(0));
  }
  return out;
}

// Steps a fresh optimizer of type Opt over the five golden gradients and compares with PyTorch.
template <class Opt, class Options>
void check_parity(const Options& options, const float (&expected)[5][6]) {
  Parameter p(golden::array(golden::kTheta0, {2, 3}));
  Opt opt({p}, options);
  for (int s = 0; s < 5; ++s) {
    p.set_grad(golden::array(golden::kGrads[s], {2, 3}));
    opt.step();
    CHECK_MESSAGE(all_close(p.data(), golden::array(expected[s], {2, 3}), golden::kAtol, 1e-6),
                  "after step " << s + 1);
  }
}
}  // namespace

TEST_SUITE("optim.adam") {
  TEST_CASE(
      "Adam's first two steps match the values worked out in double and the first moves by about "
      "lr") {
    Parameter p(Array{1.f});
    Adam opt({p});
    const std::vector<float> theta = constant_gradient_run(opt, p, 0.5f, 2);
    CHECK(theta[0] == doctest::Approx(0.99900000002).epsilon(1e-6));
    CHECK(theta[1] == doctest::Approx(0.99800000004).epsilon(1e-6));
    CHECK(opt.state(p)->step == 2);
  }

  TEST_CASE("Adam's weight_decay is L2: added to the gradient before the moments") {
    Parameter p(Array{1.f});
    Adam opt({p}, AdamOptions().weight_decay(0.01));
    const std::vector<float> theta = constant_gradient_run(opt, p, 0.5f, 2);
    CHECK(theta[0] == doctest::Approx(0.9990000000196079).epsilon(1e-6));
    CHECK(theta[1] == doctest::Approx(0.9980000005503604).epsilon(1e-6));
  }

  TEST_CASE("AdamW decays the parameter first, outside the moments (decoupled)") {
    Parameter p(Array{1.f});
    AdamW opt({p}, AdamWOptions().weight_decay(0.01));
    const std::vector<float> theta = constant_gradient_run(opt, p, 0.5f, 2);
    CHECK(theta[0] == doctest::Approx(0.99899000002).epsilon(1e-6));
    CHECK(theta[1] == doctest::Approx(0.9979800101399999).epsilon(1e-6));
    CHECK(AdamWOptions().weight_decay() == 1e-2);  // AdamW's default, unlike Adam's 0
    CHECK(AdamOptions().weight_decay() == 0.0);
  }

  TEST_CASE("five steps with random gradients match PyTorch for every Adam and AdamW variant") {
    SUBCASE("Adam") { check_parity<Adam>(AdamOptions(0.05), golden::k_adam_default); }
    SUBCASE("Adam, L2 and amsgrad") {
      check_parity<Adam>(AdamOptions(0.05).weight_decay(0.1).amsgrad(true),
                         golden::k_adam_l2_amsgrad);
    }
    SUBCASE("Adam, maximize, other betas and eps") {
      check_parity<Adam>(AdamOptions(0.05).betas({0.8, 0.99}).eps(1e-6).maximize(true),
                         golden::k_adam_maximize);
    }
    SUBCASE("Adam with beta1 = 0.3 (the lerp's second branch)") {
      check_parity<Adam>(AdamOptions(0.05).betas({0.3, 0.9}), golden::k_adam_small_beta1);
    }
    SUBCASE("AdamW") { check_parity<AdamW>(AdamWOptions(0.05).weight_decay(0.1), golden::k_adamw); }
    SUBCASE("AdamW, amsgrad and maximize") {
      check_parity<AdamW>(AdamWOptions(0.05).weight_decay(0.1).amsgrad(true).maximize(true),
                          golden::k_adamw_amsgrad_maximize);
    }
  }

  TEST_CASE("amsgrad keeps a running maximum of v that never decreases") {
    Parameter p(Array{1.f, -2.f, 3.f});
    Adam opt({p},
             AdamOptions(0.01).betas({0.9, 0.5}).amsgrad(true));  // a short memory: v falls fast
    Array previous = {0.f, 0.f, 0.f};
    for (int t = 1; t <= 8; ++t) {
      const float g = 4.0f / float(t);  // shrinking gradients: v falls after a while
      p.set_grad(Array{g, -g, 0.5f * g});
      opt.step();
      const AdamState& s = *opt.state(p);
      REQUIRE(s.max_exp_avg_sq.has_value());
      for (std::size_t i = 0; i < 3; ++i) {
        CHECK((*s.max_exp_avg_sq)(i) >= previous(i));
        CHECK((*s.max_exp_avg_sq)(i) >= s.exp_avg_sq(i));
      }
      previous = *s.max_exp_avg_sq;
    }
    CHECK(opt.state(p)->exp_avg_sq(0) <
          (*opt.state(p)->max_exp_avg_sq)(0));  // v did fall below vmax
    Adam plain({Parameter(Array{1.f})});
    CHECK_FALSE(plain.options(0).amsgrad());
  }

  TEST_CASE("maximize is descent on the negated gradient, bit for bit") {
    for (const bool decoupled : {false, true}) {
      CAPTURE(decoupled);
      Parameter up(Array{0.5f, -1.5f}), down(Array{0.5f, -1.5f});
      std::unique_ptr<Optimizer> a, b;
      if (decoupled) {
        a = std::make_unique<AdamW>(std::vector<Parameter>{up}, AdamWOptions(0.1).maximize(true));
        b = std::make_unique<AdamW>(std::vector<Parameter>{down}, AdamWOptions(0.1));
      } else {
        a = std::make_unique<Adam>(std::vector<Parameter>{up},
                                   AdamOptions(0.1).weight_decay(0.1).maximize(true));
        b = std::make_unique<Adam>(std::vector<Parameter>{down},
                                   AdamOptions(0.1).weight_decay(0.1));
      }
      for (int s = 0; s < 3; ++s) {
        up.set_grad(Array{0.25f, -0.75f});
        down.set_grad(Array{-0.25f, 0.75f});
        a->step();
        b->step();
      }
      CHECK(bit_equal(up.data(), down.data()));
    }
  }

  TEST_CASE(
      "a null gradient skips the parameter entirely but an all-zero one still moves it "
      "(pytorch/pytorch#18404)") {
    Parameter skipped(Array{1.f, 2.f}), zeroed(Array{1.f, 2.f});
    Adam opt({skipped, zeroed}, AdamOptions(0.1));
    skipped.set_grad(Array{0.5f, 0.5f});
    zeroed.set_grad(Array{0.5f, 0.5f});
    opt.step();
    opt.zero_grad();                   // set_to_none: both gradients are gone
    zeroed.set_grad(Array{0.f, 0.f});  // what zero_grad(false) would have left
    const Array skipped_before = skipped.data(), zeroed_before = zeroed.data();
    const std::uint64_t version_before = skipped.version();
    opt.step();
    CHECK(bit_equal(skipped.data(), skipped_before));  // not touched at all
    CHECK(skipped.version() == version_before);
    CHECK(opt.state(skipped)->step == 1);  // its step count did not advance
    CHECK(opt.state(zeroed)->step == 2);
    CHECK(zeroed.data()(0) < zeroed_before(0));  // the decaying moments keep moving it
    CHECK(opt.state(zeroed)->exp_avg(0) == doctest::Approx(0.045f));  // m = 0.9 · 0.05
  }

  TEST_CASE("state is created lazily and every parameter keeps its own step count") {
    Parameter a(Array{1.f}), b(Array{1.f});
    AdamW opt({a, b});
    CHECK(opt.state(a) == nullptr);
    for (int s = 0; s < 3; ++s) {
      a.set_grad(Array{0.1f});
      if (s == 2) b.set_grad(Array{0.1f});
      opt.step();
      opt.zero_grad();
    }
    CHECK(opt.state(a)->step == 3);
    CHECK(opt.state(b)->step == 1);
    // b's first step is bias-corrected as a first step: it moves by about lr, like a's first did.
    CHECK(1.0f - b.data()(0) == doctest::Approx(1e-3 + 1e-3 * 1e-2).epsilon(1e-4));
  }

  TEST_CASE(
      "a zero padding row stays exactly 0.0f through many Adam and AdamW steps with weight decay") {
    for (const bool decoupled : {false, true}) {
      CAPTURE(decoupled);
      Generator gen(7);
      Array w = randn({4, 3}, &gen);
      for (std::size_t j = 0; j < 3; ++j) w(0, j) = 0.0f;
      Parameter lut(w);
      std::unique_ptr<Optimizer> opt;
      if (decoupled)
        opt = std::make_unique<AdamW>(std::vector<Parameter>{lut},
                                      AdamWOptions(0.01).weight_decay(0.1));
      else
        opt = std::make_unique<Adam>(std::vector<Parameter>{lut},
                                     AdamOptions(0.01).weight_decay(0.1).amsgrad(true));
      for (int s = 0; s < 100; ++s) {
        Array g = randn({4, 3}, &gen);
        for (std::size_t j = 0; j < 3; ++j) g(0, j) = 0.0f;  // the pad row gets no gradient
        lut.set_grad(g);
        opt->step();
      }
      for (std::size_t j = 0; j < 3; ++j) {
        CHECK(lut.data()(0, j) == 0.0f);
        CHECK_FALSE(std::signbit(lut.data()(0, j)));
      }
    }
  }

  TEST_CASE("AdamW shrinks a non-zero row whose gradient is zero, by the factor 1 - lr * wd") {
    Parameter p(Array{2.f, -4.f});
    AdamW opt({p}, AdamWOptions(0.1).weight_decay(0.5));
    p.set_grad(Array{0.f, 0.f});
    opt.step();
    CHECK(p.data()(0) == 2.f * float(1.0 - 0.1 * 0.5));
    CHECK(p.data()(1) == -4.f * float(1.0 - 0.1 * 0.5));
  }

  TEST_CASE("row-sparse gradients are refused with PyTorch's texts, before anything changes") {
    Parameter dense(Array{1.f, 2.f});
    Parameter lut(Array{{0.f, 0.f}, {1.f, 1.f}, {2.f, 2.f}});
    lut.set_name("lut.weight");
    dense.set_grad(Array{0.5f, 0.5f});
    lut.accumulate_grad(RowSparseGrad{IndexArray{1}, Array{{1.f, 1.f}}, {3, 2}});
    SUBCASE("Adam") {
      Adam opt({dense, lut});
      CHECK_THROWS_WITH_AS(
          opt.step(),
          doctest::Contains("Adam does not support sparse gradients, please consider SparseAdam "
                            "instead | Adam: 'lut.weight' has a row-sparse gradient"),
          TypeError);
      CHECK(opt.state(dense) == nullptr);
    }
    SUBCASE("AdamW") {
      AdamW opt({dense, lut});
      CHECK_THROWS_WITH_AS(
          opt.step(),
          doctest::Contains("AdamW does not support sparse gradients | AdamW: 'lut.weight' has a "
                            "row-sparse gradient; use SparseAdam or SGD for it"),
          TypeError);
    }
    CHECK(
        bit_equal(dense.data(), Array{1.f, 2.f}));  // the dense parameter listed first is untouched
  }

  TEST_CASE("invalid hyper-parameters are refused with PyTorch's texts") {
    Parameter p(Array{1.f});
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions(-0.1)),
                         doctest::Contains("Invalid learning rate: -0.1"), ValueError);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions(NAN)),
                         doctest::Contains("Invalid learning rate: nan"), ValueError);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions().eps(-1e-8)),
                         doctest::Contains("Invalid epsilon value: -1e-08"), ValueError);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions().betas({1.0, 0.999})),
                         doctest::Contains("Invalid beta parameter at index 0: 1.0"), ValueError);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions().betas({0.9, -0.5})),
                         doctest::Contains("Invalid beta parameter at index 1: -0.5"), ValueError);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions().weight_decay(-0.01)),
                         doctest::Contains("Invalid weight_decay value: -0.01"), ValueError);
    CHECK_THROWS_WITH_AS(AdamW({p}, AdamWOptions().betas({0.9, 1.0})),
                         doctest::Contains("Invalid beta parameter at index 1: 1.0"), ValueError);
    CHECK_THROWS_WITH_AS(AdamW({p}, AdamWOptions(-1.0)),
                         doctest::Contains("Invalid learning rate: -1.0 | AdamW"), ValueError);
    CHECK_NOTHROW(Adam({p}, AdamOptions(0.0).eps(0.0)));  // lr = 0 and eps = 0 are accepted
  }

  TEST_CASE("lr = 0 leaves the parameter unchanged but still advances the state") {
    Parameter p(Array{1.f, -1.f});
    Adam opt({p}, AdamOptions(0.0));
    p.set_grad(Array{0.3f, 0.3f});
    opt.step();
    CHECK(bit_equal(p.data(), Array{1.f, -1.f}));
    CHECK(opt.state(p)->step == 1);
  }

  TEST_CASE("each group uses its own options") {
    Parameter fast(Array{1.f}), still(Array{1.f});
    Adam opt({Adam::Group{{fast}, AdamOptions(0.1)}, Adam::Group{{still}, AdamOptions(0.0)}});
    fast.set_grad(Array{1.f});
    still.set_grad(Array{1.f});
    opt.step();
    CHECK(fast.data()(0) == doctest::Approx(0.9).epsilon(1e-6));
    CHECK(still.data()(0) == 1.f);
    opt.set_options(1, AdamOptions(opt.options(1)).lr(0.1));  // writable per group, checked
    CHECK(opt.lr(1) == 0.1);
    CHECK_THROWS_WITH_AS(opt.set_options(1, AdamOptions(opt.options(1)).eps(-1.0)),
                         doctest::Contains("Invalid epsilon value: -1.0 | Adam: expected eps >= 0"),
                         ValueError);
    CHECK(opt.options(1).eps() == 1e-8);  // refused: unchanged
    opt.step();
    CHECK(still.data()(0) < 1.f);
  }

  TEST_CASE("a step writes each parameter once (one version bump) and records nothing") {
    Parameter p(Array{1.f, 2.f}, true);
    Adam opt({p});
    p.set_grad(Array{1.f, 1.f});
    const std::uint64_t before = p.version();
    const std::size_t tape_before = autograd::tape().size();
    opt.step();
    CHECK(p.version() == before + 1);
    CHECK(autograd::tape().size() == tape_before);
    CHECK(autograd::grad_enabled());  // the NoGradGuard is gone again
  }

  TEST_CASE("a frozen parameter without a gradient is accepted and skipped") {
    Parameter trained(Array{1.f}), frozen(Array{5.f}, /*requires_grad=*/false);
    Adam opt({trained, frozen});
    trained.set_grad(Array{1.f});
    opt.step();
    CHECK(frozen.data()(0) == 5.f);
    CHECK(opt.state(frozen) == nullptr);
    CHECK_THROWS_WITH_AS(opt.state(Parameter(Array{1.f})),
                         doctest::Contains("is not one of this optimizer's"), ValueError);
  }
}  // TEST_SUITE
