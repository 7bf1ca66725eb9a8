// tests/optim/test_adamw_groups.cpp: AdamW with two parameter groups (decay on a matrix, none on a
// bias, as a GPT's parameter_groups splits them) under LambdaLR with the cosine schedule, step by
// step against PyTorch 1.13 (scripts/golden/gpt.py: lr 1e-2, betas (0.9, 0.99), eps 1e-8, groups
// weight_decay 0.1 and 0, cosine_with_warmup(e, 1, 3, 0.1), four steps with random gradients).
#include <doctest/doctest.h>

#include <cstring>

#include <tapegrad/tapegrad.hpp>
#include <xtensor/xview.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

TEST_SUITE("optim.adamw_groups") {
  TEST_CASE(
      "AdamW with a decayed and an undecayed group under the cosine schedule matches PyTorch") {
    const io::SafetensorsFile f = io::load_safetensors(
        std::string(TAPEGRAD_SOURCE_DIR) + "/tests/transformer/fixtures/gpt_parity.safetensors");
    Parameter w(f.to_float("adamw.w0")), b(f.to_float("adamw.b0"));
    const auto base = optim::AdamWOptions(1e-2).betas({0.9, 0.99}).eps(1e-8);
    optim::AdamW opt({{{w}, optim::AdamWOptions(base).weight_decay(0.1)},
                      {{b}, optim::AdamWOptions(base).weight_decay(0.0)}});
    optim::LambdaLR sched(opt,
                          [](std::int64_t e) { return optim::cosine_with_warmup(e, 1, 3, 0.1); });
    const Array gw = f.to_float("adamw.gw"), gb = f.to_float("adamw.gb"),
                ws = f.to_float("adamw.w"), bs = f.to_float("adamw.b");
    const io::TensorRecord& lrs = f.record("adamw.lr");  // F64
    for (std::size_t step = 0; step < 4; ++step) {
      CAPTURE(step);
      double lr;
      std::memcpy(&lr, lrs.bytes().data() + step * sizeof(double), sizeof(double));
      CHECK(opt.lr(0) == doctest::Approx(lr).epsilon(1e-15));
      CHECK(opt.lr(1) == doctest::Approx(lr).epsilon(1e-15));
      w.set_grad(Array(xt::view(gw, step)));
      b.set_grad(Array(xt::view(gb, step)));
      opt.step();
      sched.step();
      CHECK(all_close(w.data(), Array(xt::view(ws, step)), 1e-7,
                      1e-6));  // the Adam goldens' tolerance
      CHECK(all_close(b.data(), Array(xt::view(bs, step)), 1e-7, 1e-6));
    }
  }

}  // TEST_SUITE
