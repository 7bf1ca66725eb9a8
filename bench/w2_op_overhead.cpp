// bench/w2_op_overhead.cpp: W2 (docs/benchmarks.md), the per-op overhead of the autograd engine.
// x: 16 elements requiring grad; y = x, then 100 times y = y * 1.0001 + 0.0001 (200 recorded
// ops); loss = sum(y); backward. Figure: median microseconds per recorded op, forward + backward.
#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv);
  using namespace tapegrad;
  Generator gen(0);
  Tensor x(randn({16}, &gen), true);
  const int warmup = 50, iters = 500;
  std::vector<double> total, fwd, bwd;
  for (int it = 0; it < warmup + iters; ++it) {
    x.zero_grad();
    const double t0 = bench::now_seconds();
    Tensor y = x;
    for (int i = 0; i < 100; ++i) y = y * 1.0001 + 0.0001;
    Tensor loss = ops::sum(y);
    const double t1 = bench::now_seconds();
    loss.backward();
    const double t2 = bench::now_seconds();
    if (it >= warmup) {
      total.push_back(t2 - t0);
      fwd.push_back(t1 - t0);
      bwd.push_back(t2 - t1);
    }
  }
  const double k = 1e6 / 200.0;
  const bench::Stats s = bench::stats(total);
  std::printf(
      "W2 threads=%d median_us_per_op=%.3f min_us_per_op=%.3f max_us_per_op=%.3f "
      "fwd_us_per_op=%.3f bwd_us_per_op=%.3f n=%d warmup=%d\n",
      args.threads, s.median * k, s.min * k, s.max * k, bench::stats(fwd).median * k,
      bench::stats(bwd).median * k, iters, warmup);
  return 0;
}
