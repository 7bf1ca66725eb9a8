// bench/w5_matmul.cpp: W5 (docs/benchmarks.md), matmul forward + backward at 1024.
// A (1024, 1024) @ B (1024, 1024), both requiring grad; C.backward(G) for a fixed random G gives
// dA = G B^T and dB = A^T G: three GEMMs, GFLOP/s = 3 * 2 * 1024^3 / seconds. The gradients are
// dropped before each run, as the peer does.
#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv);
  using namespace tapegrad;
  const std::size_t n = 1024;
  Generator gen(0);
  Tensor A(randn({n, n}, &gen), true);
  Tensor B(randn({n, n}, &gen), true);
  const Array G = randn({n, n}, &gen);
  const int warmup = 5, iters = 20;
  std::vector<double> seconds;
  for (int it = 0; it < warmup + iters; ++it) {
    A.zero_grad();
    B.zero_grad();
    const double t0 = bench::now_seconds();
    Tensor C = ops::matmul(A, B);
    C.backward(G);
    const double t1 = bench::now_seconds();
    if (it >= warmup) seconds.push_back(t1 - t0);
  }
  char extra[64];
  std::snprintf(extra, sizeof extra, " GFLOPs=%.2f",
                6.0 * double(n * n * n) / bench::stats(seconds).median * 1e-9);
  bench::print_ms("W5", args.threads, seconds, warmup, extra);
  return 0;
}
