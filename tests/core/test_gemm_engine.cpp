// tests/core/test_gemm_engine.cpp: the engines of the matrix products (core/gemm_engine.hpp): each
// computes the same products to float precision (against a double-precision sum), on every
// transpose and on the shapes of a GPT's products; a model's gradients agree across engines; the
// choice is refused with the choices named.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

namespace {
// Restores the engine in use when the test ends.
struct EngineScope {
  GemmEngine saved = gemm_engine();
  ~EngineScope() { set_gemm_engine(saved); }
};
}  // namespace

TEST_CASE("every engine multiplies as a double-precision sum does, to float precision") {
  const EngineScope restore;
  Generator gen(5);
  for (const std::array<std::size_t, 3> mkn : std::vector<std::array<std::size_t, 3>>{
           {1, 7, 5}, {3, 1, 4}, {17, 33, 9}, {64, 128, 96}, {2, 300, 1}}) {
    const std::size_t M = mkn[0], K = mkn[1], N = mkn[2];
    const Tensor a = Tensor(randn({M, K}, &gen)), b = Tensor(randn({K, N}, &gen));
    Array want = Array::from_shape({M, N});
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        double s = 0.0;
        for (std::size_t k = 0; k < K; ++k) s += double(a.data()(i, k)) * double(b.data()(k, j));
        want(i, j) = float(s);
      }
    for (const GemmEngine engine : available_gemm_engines()) {
      CAPTURE(to_string(engine));
      INFO("M ", M, " K ", K, " N ", N);
      set_gemm_engine(engine);
      CHECK(testing::all_close(ops::matmul(a, b).data(), want, 1e-5, 1e-5));
      // the transposes too: (b^T a^T)^T
      const Tensor t = ops::matmul(ops::transpose(b, 0, 1), ops::transpose(a, 0, 1));
      CHECK(testing::all_close(ops::transpose(t, 0, 1).data(), want, 1e-5, 1e-5));
    }
  }
}

TEST_CASE("a GPT's loss and gradients agree across the engines") {
  const EngineScope restore;
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

TEST_CASE("the engine's name, and an engine this build lacks, refused") {
  const EngineScope restore;
  CHECK(to_string(GemmEngine::openblas) == "openblas");
  CHECK(to_string(GemmEngine::onednn) == "onednn");
  CHECK(to_string(GemmEngine::reference) == "reference");
  const auto engines = available_gemm_engines();
  CHECK(engines.front() == GemmEngine::openblas);
  CHECK(engines.back() == GemmEngine::reference);
  if (engines.size() == 2)
    CHECK_THROWS_WITH_AS(set_gemm_engine(GemmEngine::onednn),
                         doctest::Contains("tapegrad was built without oneDNN"), ValueError);
  set_gemm_engine(GemmEngine::reference);
  CHECK(gemm_engine() == GemmEngine::reference);
  CHECK(environment_line().find(", matrix products reference") != std::string::npos);
}
