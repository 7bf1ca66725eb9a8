// bench/w3_adam_step.cpp: W3 (docs/benchmarks.md), one Adam step over P = 10,000,000 parameters
// with a dense gradient, as the peer: W1's options Adam(lr = 1e-3, betas = (0.9, 0.98), eps = 1e-9).
// The step reads θ, g, m, v once and writes θ, m, v once: effective GB/s = 28 · P / seconds.
// The first (warm-up) step also allocates m and v.
#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv);
  using namespace tapegrad;
  const std::size_t P = 10'000'000;
  Generator gen(0);
  Parameter p(randn({P}, &gen));
  p.set_grad(randn({P}, &gen));
  optim::Adam opt({p}, optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
  const int warmup = 5, iters = 20;
  std::vector<double> seconds;
  for (int it = 0; it < warmup + iters; ++it) {
    const double t0 = bench::now_seconds();
    opt.step();
    const double t1 = bench::now_seconds();
    if (it >= warmup) seconds.push_back(t1 - t0);
  }
  char extra[96];
  std::snprintf(extra, sizeof extra, " GBps=%.2f P=%zu",
                28.0 * double(P) / bench::stats(seconds).median * 1e-9, P);
  bench::print_ms("W3", args.threads, seconds, warmup, extra);
  return 0;
}
