// tests/optim/test_lr_scheduler.cpp: LambdaLR and the Noam rate (The Annotated Transformer's).
#include <doctest/doctest.h>

#include <cstring>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;

TEST_SUITE("optim.lr_scheduler") {
  TEST_CASE("noam matches the float64 vectors and step 0 counts as step 1") {
    // float64 values of factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), confirmed by
    // scripts/golden/optim.py
    CHECK(noam(0, 512, 1.0, 4000) == doctest::Approx(1.746928107421711e-07).epsilon(1e-12));
    CHECK(noam(1, 512, 1.0, 4000) == doctest::Approx(1.746928107421711e-07).epsilon(1e-12));
    CHECK(noam(100, 512, 1.0, 4000) == doctest::Approx(1.746928107421711e-05).epsilon(1e-12));
    CHECK(noam(4000, 512, 1.0, 4000) == doctest::Approx(6.987712429686843e-04).epsilon(1e-12));
    CHECK(noam(16000, 512, 1.0, 4000) == doctest::Approx(3.4938562148434214e-04).epsilon(1e-12));
    CHECK(noam(4000, 512, 1.0, 4000) ==
          doctest::Approx(1.0 / std::sqrt(512.0 * 4000.0)).epsilon(1e-12));  // the peak
    CHECK(noam(40, 16, 2.0, 40) == doctest::Approx(2.0 * noam(40, 16, 1.0, 40)).epsilon(1e-15));
  }

  TEST_CASE("noam refuses a d_model or warmup that is not positive, and a negative step") {
    CHECK_THROWS_WITH_AS(noam(1, 0, 1.0, 4000),
                         doctest::Contains("noam: expected d_model > 0, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(noam(1, 512, 1.0, -5),
                         doctest::Contains("noam: expected warmup > 0, got -5"), ValueError);
    CHECK_THROWS_WITH_AS(noam(-1, 512, 1.0, 400), doctest::Contains("expected step >= 0, got -1"),
                         ValueError);
  }

  TEST_CASE("LambdaLR with noam gives the copy task's rates (base_lr 0.5, d 512, warmup 400)") {
    Parameter p(Array{1.f});
    Adam opt({p}, AdamOptions(0.5).betas({0.9, 0.98}).eps(1e-9));
    LambdaLR sched(opt, [](std::int64_t e) { return noam(e, 512, 1.0, 400); });
    CHECK(opt.lr(0) ==
          doctest::Approx(0.5 * noam(0, 512, 1.0, 400)).epsilon(1e-15));  // set at construction
    CHECK(sched.base_lrs() == std::vector<double>{0.5});
    for (int e = 0; e < 800; ++e) {
      sched.step();
      if (sched.last_epoch() == 400)
        CHECK(opt.lr(0) == doctest::Approx(1.1048543456039807e-03).epsilon(1e-12));
    }
    CHECK(sched.last_epoch() == 800);
    CHECK(opt.lr(0) == doctest::Approx(7.8125e-04).epsilon(1e-12));
    CHECK(sched.get_last_lr() == std::vector<double>{opt.lr(0)});
  }

  TEST_CASE("in the tutorials' loop order, step k of the optimizer uses base_lr * f(k - 1)") {
    Parameter p(Array{0.f});
    SGD opt({p}, SGDOptions(1.0));
    LambdaLR sched(opt, [](std::int64_t e) { return 0.5 * double(e + 1); });
    std::vector<float> moves;
    for (int k = 1; k <= 3; ++k) {
      const float before = p.data()(0);
      p.set_grad(Array{1.f});
      opt.step();
      opt.zero_grad();
      sched.step();
      moves.push_back(before - p.data()(0));
    }
    CHECK(moves == std::vector<float>{0.5f, 1.0f, 1.5f});
  }

  TEST_CASE("one function per group, each applied to its group's own base rate") {
    Parameter a(Array{1.f}), b(Array{1.f});
    SGD opt({SGD::Group{{a}, SGDOptions(1.0)}, SGD::Group{{b}, SGDOptions(0.1)}});
    LambdaLR sched(opt, std::vector<LambdaLR::LrLambda>{[](std::int64_t e) { return double(e); },
                                                        [](std::int64_t) { return 3.0; }});
    CHECK(opt.lr(0) == 0.0);
    CHECK(opt.lr(1) == doctest::Approx(0.3));
    sched.step();
    sched.step();
    CHECK(sched.get_last_lr() == std::vector<double>{2.0, 0.1 * 3.0});
    CHECK_THROWS_WITH_AS(
        LambdaLR(opt, std::vector<LambdaLR::LrLambda>{[](std::int64_t) { return 1.0; }}),
        doctest::Contains("Expected 2 lr_lambdas, but got 1"), ValueError);
  }

  TEST_CASE("the state dict holds last_epoch and base_lrs and loading it resumes the schedule") {
    Parameter p(Array{1.f});
    Adam opt({p}, AdamOptions(2.0));
    auto f = [](std::int64_t e) { return noam(e, 16, 1.0, 40); };
    LambdaLR sched(opt, f);
    for (int e = 0; e < 10; ++e) sched.step();
    const LambdaLRState saved = sched.state_dict();
    CHECK(saved.last_epoch == 10);
    CHECK(saved.base_lrs == std::vector<double>{2.0});

    Parameter q(Array{1.f});
    Adam opt2({q}, AdamOptions(2.0));
    LambdaLR resumed(opt2, f);
    resumed.load_state_dict(saved);
    CHECK(resumed.last_epoch() == 10);
    CHECK(resumed.get_last_lr() == sched.get_last_lr());
    sched.step();
    resumed.step();
    CHECK(opt2.lr(0) == opt.lr(0));

    CHECK_THROWS_WITH_AS(resumed.load_state_dict(LambdaLRState{3, {1.0, 2.0}}),
                         doctest::Contains("expected 1 base_lrs (one per parameter group), got 2"),
                         ValueError);
    CHECK(resumed.last_epoch() == 11);  // a refused load changes nothing
  }

  TEST_CASE("cosine_with_warmup is nanoGPT's get_lr divided by the learning rate") {
    // scripts/golden/gpt.py: get_lr(it) / learning_rate for it = 0 .. 12, warm-up 3, decay to step 10,
    // min_lr = 0.1 learning_rate (PyTorch 1.13's Python, float64)
    const io::SafetensorsFile f = io::load_safetensors(
        std::string(TAPEGRAD_SOURCE_DIR) + "/tests/transformer/fixtures/gpt_parity.safetensors");
    const io::TensorRecord& golden = f.record("cosine.factor");  // F64
    REQUIRE(golden.bytes().size() == 13 * sizeof(double));
    for (std::int64_t it = 0; it < 13; ++it) {
      CAPTURE(it);
      double want;
      std::memcpy(&want, golden.bytes().data() + it * sizeof(double), sizeof(double));
      CHECK(cosine_with_warmup(it, 3, 10, 0.1) == doctest::Approx(want).epsilon(1e-14));
    }
    CHECK(cosine_with_warmup(3, 3, 10, 0.1) == 1.0);  // the peak, after the warm-up
    CHECK(cosine_with_warmup(10, 3, 10, 0.1) == doctest::Approx(0.1).epsilon(1e-15));  // the floor
    CHECK(cosine_with_warmup(0, 0, 10, 0.0) == 1.0);                                   // no warm-up
  }

  TEST_CASE("LambdaLR with cosine_with_warmup gives the baby GPT's rates") {
    Parameter p(Array{1.f});
    AdamW opt({p}, AdamWOptions(1e-3));
    LambdaLR sched(opt, [](std::int64_t e) { return cosine_with_warmup(e, 100, 2000, 0.1); });
    CHECK(opt.lr(0) == doctest::Approx(1e-3 / 101).epsilon(1e-12));  // step 0 of the warm-up
    for (int e = 0; e < 2000; ++e) sched.step();
    CHECK(opt.lr(0) == doctest::Approx(1e-4).epsilon(1e-12));
  }

  TEST_CASE(
      "cosine_with_warmup refuses a warm-up not shorter than the run, a ratio outside 0 to 1, a "
      "negative step") {
    CHECK_THROWS_WITH_AS(cosine_with_warmup(0, 10, 10, 0.1),
                         doctest::Contains("expected 0 <= warmup < max_steps, got warmup 10"),
                         ValueError);
    CHECK_THROWS_WITH_AS(cosine_with_warmup(0, -1, 10, 0.1),
                         doctest::Contains("0 <= warmup < max_steps"), ValueError);
    CHECK_THROWS_WITH_AS(cosine_with_warmup(0, 1, 10, 1.5),
                         doctest::Contains("min_lr_ratio in [0, 1], got 1.5"), ValueError);
    CHECK_THROWS_WITH_AS(cosine_with_warmup(-1, 1, 10, 0.1),
                         doctest::Contains("expected step >= 0, got -1"), ValueError);
  }

}  // TEST_SUITE
