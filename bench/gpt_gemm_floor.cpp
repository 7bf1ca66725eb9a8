// bench/gpt_gemm_floor.cpp: the matrix products of one GPT training step, timed alone with
// OpenBLAS: the floor a framework's step cannot go below (everything else it does is overhead).
//
//     gpt_gemm_floor --threads 1 [--batch-size 12 --block-size 64 --n-layer 4 --n-head 4 --n-embd 128 --vocab 114]
//     ->  gpt_gemm_floor threads=1 median_ms=... min_ms=... gflop=... products=...
//
// The products, with N = batch * block rows and C = n_embd, for each of the n_layer blocks:
//   the four Linears (C -> 3C, C -> C, C -> 4C, 4C -> C): forward x W^T, backward dY W and dY^T x
//   attention, per (batch row, head): S = Q K^T and O = P V forward; dV = P^T dO, dP = dO V^T,
//   dQ = dS K, dK = dS^T Q backward, each head read in place (leading dimension 3C, as a fused
//   qkv); then the head (C -> vocab) forward and both backward products.
// Each is one cblas_sgemm call on buffers laid out as the step's (one set per block, each head read
// in place in a (N, 3C) qkv). The whole list is timed 30 times after 5 warm-ups; the median is the
// floor.
//
// Threads: OpenBLAS runs single-threaded, and with --threads T each of T threads runs every T-th
// product of the list, on a copy of the step's buffers of its own; the time is until the last
// thread is done. So the floor at T threads is what T cores get through when each does nothing but
// single-threaded sgemm, which is how tapegrad runs its products (and faster than handing each
// product to OpenBLAS's own threads: the attention's products are 64 x 64 x 32, too small to split,
// and OpenBLAS's threading measured slower than one thread on them). The order of the products
// and which of them depend on which are ignored: a real step cannot do better.
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"

namespace {
// One sgemm call on buffers that belong to the step's activations, weights and gradients.
struct Product {
  bool ta, tb;
  int M, N, K;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  float* c;
  int ldc;
};

void run(const Product& p) {
  cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans,
              p.M, p.N, p.K, 1.0f, p.a, p.lda, p.b, p.ldb, 0.0f, p.c, p.ldc);
}

// Buffers live as long as the program, like a step's tensors live through its backward.
std::vector<std::vector<float>> storage;
float* buffer(std::size_t n) {
  storage.emplace_back(n, 0.01f);
  return storage.back().data();
}

// The products of one training step (see the top of the file), on buffers of their own.
std::vector<Product> step_products(int B, int T, int L, int H, int C, int vocab) {
  const int N = B * T, hs = C / H;
  std::vector<Product> products;
  struct Linear {
    float *x, *w, *y, *dy, *dx, *dw;
  };
  // x (N, in), W (out, in), y and dY (N, out): Y = x W^T, dX = dY W, dW = dY^T x
  auto linear = [&](int in, int out, float* x, float* dx) {
    Linear l{x,
             buffer(std::size_t(out) * in),
             buffer(std::size_t(N) * out),
             buffer(std::size_t(N) * out),
             dx,
             buffer(std::size_t(out) * in)};
    products.push_back({false, true, N, out, in, l.x, in, l.w, in, l.y, out});
    products.push_back({false, false, N, in, out, l.dy, out, l.w, in, l.dx, in});
    products.push_back({true, false, out, in, N, l.dy, out, l.x, in, l.dw, in});
    return l;
  };
  float* x = buffer(std::size_t(N) * C);
  for (int layer = 0; layer < L; ++layer) {
    float *ln1 = buffer(std::size_t(N) * C), *dln1 = buffer(std::size_t(N) * C);
    const Linear c_attn = linear(C, 3 * C, ln1, dln1);  // qkv = c_attn.y, dqkv = c_attn.dy
    float *att = buffer(std::size_t(N) * C), *datt = buffer(std::size_t(N) * C);
    float *P = buffer(std::size_t(B) * H * T * T), *dS = buffer(std::size_t(T) * T);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {  // one (batch row, head), read in place
        const std::size_t row = std::size_t(b) * T, at = (std::size_t(b) * H + h) * T * T;
        const float* Q = c_attn.y + row * 3 * C + h * hs;
        const float *K = Q + C, *V = Q + 2 * C;
        float* dQ = c_attn.dy + row * 3 * C + h * hs;
        float *dK = dQ + C, *dV = dQ + 2 * C;
        float* O = att + row * C + h * hs;
        const float* dO = datt + row * C + h * hs;
        products.push_back({false, true, T, T, hs, Q, 3 * C, K, 3 * C, P + at, T});  // S = Q K^T
        products.push_back({false, false, T, hs, T, P + at, T, V, 3 * C, O, C});     // O = P V
        products.push_back({true, false, T, hs, T, P + at, T, dO, C, dV, 3 * C});    // dV = P^T dO
        products.push_back({false, true, T, T, hs, dO, C, V, 3 * C, dS, T});         // dP = dO V^T
        products.push_back({false, false, T, hs, T, dS, T, K, 3 * C, dQ, 3 * C});    // dQ = dS K
        products.push_back({true, false, T, hs, T, dS, T, Q, 3 * C, dK, 3 * C});     // dK = dS^T Q
      }
    linear(C, C, att, datt);
    float *ln2 = buffer(std::size_t(N) * C), *dln2 = buffer(std::size_t(N) * C);
    const Linear c_fc = linear(C, 4 * C, ln2, dln2);
    float *g = buffer(std::size_t(N) * 4 * C), *dg = buffer(std::size_t(N) * 4 * C);
    (void)c_fc;
    linear(4 * C, C, g, dg);
  }
  linear(C, vocab, x, buffer(std::size_t(N) * C));
  return products;
}
}  // namespace

int main(int argc, char** argv) {
  int threads = 1, B = 12, T = 64, L = 4, H = 4, C = 128, vocab = 114;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--threads")
      threads = v;
    else if (k == "--batch-size")
      B = v;
    else if (k == "--block-size")
      T = v;
    else if (k == "--n-layer")
      L = v;
    else if (k == "--n-head")
      H = v;
    else if (k == "--n-embd")
      C = v;
    else if (k == "--vocab")
      vocab = v;
    else {
      std::fprintf(stderr, "gpt_gemm_floor: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1 || B < 1 || T < 1 || L < 1 || H < 1 || C < 1 || vocab < 1 || C % H != 0) {
    std::fprintf(stderr,
                 "gpt_gemm_floor: expected positive sizes and n_embd a multiple of n_head\n");
    return 2;
  }
  openblas_set_num_threads(1);
  // One copy of the step per thread: thread t runs products t, t + T, t + 2T, ... of its copy.
  std::vector<std::vector<Product>> copies;
  for (int t = 0; t < threads; ++t) copies.push_back(step_products(B, T, L, H, C, vocab));
  const std::vector<Product>& products = copies.front();
  double flops = 0.0;
  for (const Product& p : products) flops += 2.0 * double(p.M) * double(p.N) * double(p.K);
  std::vector<double> seconds;
  for (int it = 0; it < 35; ++it) {
    const double t0 = bench::now_seconds();
    if (threads == 1) {
      for (const Product& p : products) run(p);
    } else {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&copies, t, threads] {
          const std::vector<Product>& list = copies[std::size_t(t)];
          for (std::size_t i = std::size_t(t); i < list.size(); i += std::size_t(threads))
            run(list[i]);
        });
      for (std::thread& th : pool) th.join();
    }
    if (it >= 5) seconds.push_back(bench::now_seconds() - t0);
  }
  const bench::Stats s = bench::stats(seconds);
  std::printf(
      "gpt_gemm_floor threads=%d median_ms=%.4f min_ms=%.4f max_ms=%.4f gflop=%.4f products=%zu "
      "gflops=%.2f\n",
      threads, s.median * 1e3, s.min * 1e3, s.max * 1e3, flops * 1e-9, products.size(),
      flops / s.median * 1e-9);
  return 0;
}
