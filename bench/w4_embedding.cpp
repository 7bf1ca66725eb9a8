// bench/w4_embedding.cpp: W4 (docs/benchmarks.md), embedding forward + backward into a dense
// gradient.
// V = 32000, D = 512, ids (64, 256) from [0, V) with exactly 10 % of them equal to padding_idx 0;
// forward gather, then backward of sum(out * G) for a fixed random G, i.e. out.backward(G), as the
// peer does. Like the peer, the gradient is dropped before each run (set_to_none), so allocating
// and zero-filling the 64 MiB dense gradient is part of the timed work.
// Effective GB/s = 4 * D * (N rows read + N rows written + n_nonpad gradient rows accumulated) / s.
#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv);
  using namespace tapegrad;
  const std::size_t V = 32000, D = 512, B = 64, T = 256, N = B * T;
  Generator gen(0);
  Parameter weight(randn({V, D}, &gen));
  IndexArray ids = IndexArray::from_shape({B, T});
  for (std::size_t p = 0; p < N; ++p) ids.data()[p] = gen.randint(0, std::int64_t(V));
  // exactly round(0.1 N) positions set to the pad id: the first n_pad of a random permutation
  std::vector<std::size_t> order(N);
  for (std::size_t p = 0; p < N; ++p) order[p] = p;
  const std::size_t n_pad = (N + 5) / 10;
  for (std::size_t p = 0; p < n_pad; ++p)
    std::swap(order[p], order[p + std::size_t(gen.randint(0, std::int64_t(N - p)))]);
  for (std::size_t p = 0; p < n_pad; ++p) ids.data()[order[p]] = 0;
  std::size_t n_nonpad = 0;
  for (std::size_t p = 0; p < N; ++p) n_nonpad += ids.data()[p] != 0;
  const Array G = randn({B, T, D}, &gen);
  const auto options = EmbeddingOptions().padding_idx(0);

  const int warmup = 5, iters = 20;
  std::vector<double> seconds;
  for (int it = 0; it < warmup + iters; ++it) {
    weight.zero_grad(/*set_to_none=*/true);  // a fresh dense gradient every time, as the peer
    // backward takes its seed by value: moved in, as a loss's gradient is, so that the timed work
    // holds no 32 MiB copy (PyTorch's out.backward(G) makes none either).
    Array seed = G;
    const double t0 = bench::now_seconds();
    Tensor out = ops::embedding(ids, weight, options);
    out.backward(std::move(seed));  // = backward of sum(out * G)
    const double t1 = bench::now_seconds();
    if (it >= warmup) seconds.push_back(t1 - t0);
  }
  const double bytes = 4.0 * double(D) * double(N + N + n_nonpad);
  char extra[160];
  std::snprintf(extra, sizeof extra, " GBps=%.2f bytes=%.0f n_nonpad=%zu dense_grad_bytes=%zu",
                bytes / bench::stats(seconds).median * 1e-9, bytes, n_nonpad, V * D * 4);
  bench::print_ms("W4", args.threads, seconds, warmup, extra);
  return 0;
}
