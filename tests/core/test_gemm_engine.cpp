// tests/core/test_gemm_engine.cpp: the engines of the matrix products (core/gemm_engine.hpp): each
// computes the same products to float precision (against a double-precision sum), on every
// transpose and on the shapes of a GPT's products; the choice is refused with the choices named.
// A whole GPT step on each engine: tests/transformer/test_gpt_engines.cpp.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

TEST_CASE("every engine multiplies as a double-precision sum does, to float precision") {
  const testing::GemmEngineScope restore;
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

TEST_CASE("the engine's name, and an engine this build lacks, refused") {
  const testing::GemmEngineScope restore;
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
