// tests/transformer/test_gpt_engines.cpp: a whole GPT step on each engine of the matrix products
// (core/gemm_engine.hpp) and in bf16 autocast (core/autocast.hpp). The engines' and autocast's own
// products are tested in tests/core/test_gemm_engine.cpp and tests/core/test_autocast.cpp; here a
// model's loss and every gradient agree across the engines, and a bf16 step stays close to float32
// with float32 parameters and gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

TEST_SUITE("gemm_engine") {
  TEST_CASE("a GPT's loss and gradients agree across the engines") {
    const testing::GemmEngineScope restore;
    namespace tt = nn::transformer;
    const auto config = tt::GPTConfig(50, 16).n_layer(2).n_head(2).n_embd(32);
    IndexArray idx = IndexArray::from_shape({3, 16}), targets = idx;
    for (std::size_t i = 0; i < idx.size(); ++i)
      idx.data()[i] = std::int64_t(i * 7 % 50), targets.data()[i] = std::int64_t(i * 11 % 50);
    std::vector<std::vector<Array>> grads;
    std::vector<double> losses;
    for (const GemmEngine engine : available_gemm_engines()) {
      set_gemm_engine(engine);
      tt::GPT model(config, std::make_shared<Generator>(1));
      const Tensor loss = model.loss(idx, targets);
      loss.backward();
      losses.push_back(loss.item());
      grads.emplace_back();
      for (const Parameter& p : model.parameters()) grads.back().push_back(p.grad());
    }
    for (std::size_t e = 1; e < grads.size(); ++e) {
      CAPTURE(to_string(available_gemm_engines()[e]));
      CHECK(losses[e] == doctest::Approx(losses[0]).epsilon(1e-6));
      for (std::size_t i = 0; i < grads[0].size(); ++i)
        CHECK(testing::all_close(grads[e][i], grads[0][i], 1e-6, 1e-4));
    }
  }

  TEST_CASE("a GPT step in bf16 stays close to float32, its parameters and gradients float32") {
    namespace tt = nn::transformer;
    const auto config = tt::GPTConfig(40, 16).n_layer(2).n_head(2).n_embd(32);
    IndexArray idx = IndexArray::from_shape({2, 16}), targets = idx;
    for (std::size_t i = 0; i < idx.size(); ++i)
      idx.data()[i] = std::int64_t(i * 7 % 40), targets.data()[i] = std::int64_t(i * 3 % 40);
    tt::GPT fp32(config, std::make_shared<Generator>(2)),
        mixed(config, std::make_shared<Generator>(2));
    const double loss32 = fp32.loss(idx, targets).item();
    double loss16 = 0.0;
    {
      autocast::bf16 scope;
      const Tensor loss = mixed.loss(idx, targets);
      loss.backward();
      loss16 = loss.item();
    }
    CHECK(loss16 == doctest::Approx(loss32).epsilon(1e-2));
    CHECK(loss16 != loss32);
    for (const Parameter& p : mixed.parameters()) {
      CHECK(p.has_grad());
      CHECK(std::all_of(p.grad().begin(), p.grad().end(), [](float v) { return std::isfinite(v); }));
    }
  }
}
