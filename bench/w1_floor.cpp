// bench/w1_floor.cpp: the practical floor of BENCHMARKS.md W1 on this machine. The same training
// step as w1_training_step (same model, data, dropout and Adam), written by hand: fused loops,
// no tape, no tensors, no allocation inside the step, OpenBLAS for the three GEMMs.
// Issue 6 asks tapegrad to land within 1.5x of such a floor; bench/compare runs this program
// beside tapegrad's so that both figures come from the same minutes of this (noisy) machine.
//
// Not a second implementation to maintain: nothing here is tested or exported. Differences from
// tapegrad's step that only make the floor FASTER (so the comparison is, if anything, strict):
//   * gather, * sqrt(D), + pe, dropout: one pass; dropout backward and the scatter: one pass;
//   * the cross-entropy forward and backward in one pass over the logits;
//   * Adam's bias corrections folded into one step size (PyTorch's formula, reassociated).
// The dropout mask is drawn with tapegrad's Generator: SPEC 2.1.4 fixes the stream (one u24 of
// mt19937_64 per element) and that is the fastest implementation of it we have.
// Threads: OpenMP; each thread calls single-threaded sgemm on its share of rows (or columns).
//
// Prints "W1-S-floor threads=T median_ms=..." (and M, L): 20 steps after 5 warm-up steps.
#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <tapegrad/nn/positional_encoding.hpp>
#include <tapegrad/random.hpp>

#include "../src/exp_f32.hpp"   // the same vectorised e^x as tapegrad's cross_entropy
#include "bench_common.hpp"

extern "C" void openblas_set_num_threads(int);

namespace {

struct Size {
  const char* name;
  std::size_t V, D, B, T, C;
};
constexpr Size kSizes[] = {{"S", 1000, 64, 16, 32, 16}, {"M", 10000, 512, 32, 128, 16}, {"L", 32000, 512, 64, 256, 64}};

// Rows [begin, end) of n for thread t of T: one contiguous share each.
void share(std::size_t n, std::size_t& begin, std::size_t& end) {
  const std::size_t T = std::size_t(omp_get_num_threads()), t = std::size_t(omp_get_thread_num());
  begin = n * t / T;
  end = n * (t + 1) / T;
}

// One Adam step (lr 1e-3, betas 0.9 / 0.98, eps 1e-9) over n elements.
void adam(float* theta, const float* g, float* m, float* v, std::size_t n, int step) {
  const double b1 = 0.9, b2 = 0.98, lr = 1e-3, eps = 1e-9;
  const float bc1 = float(1.0 - std::pow(b1, step)), sqrt_bc2 = float(std::sqrt(1.0 - std::pow(b2, step)));
  const float w1 = float(1.0 - b1), w2 = float(1.0 - b2), beta1 = float(b1), beta2 = float(b2);
  const float step_size = float(lr) / bc1, e = float(eps);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float mi = beta1 * m[i] + w1 * g[i];
    const float vi = beta2 * v[i] + w2 * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    theta[i] -= step_size * mi / (std::sqrt(vi) / sqrt_bc2 + e);
  }
}

void run(const Size& s, int threads) {
  const std::size_t V = s.V, D = s.D, C = s.C, N = s.B * s.T, T = s.T;
  const float p = 0.1f, keep_scale = 1.0f / (1.0f - p), emb_scale = float(std::sqrt(double(D)));
  tapegrad::Generator gen(0), data(1);

  // parameters and Adam state
  std::vector<float> W(V * D), Wp(C * D), b(C);
  for (float& w : W) w = float(gen.normal());
  for (std::size_t d = 0; d < D; ++d) W[d] = 0.0f;                   // padding row 0
  const double bound = 1.0 / std::sqrt(double(D));
  for (float& w : Wp) w = float(-bound + 2 * bound * gen.uniform_double());
  for (float& w : b) w = float(-bound + 2 * bound * gen.uniform_double());
  std::vector<float> gW(V * D), gWp(C * D), gb(C);
  std::vector<float> mW(V * D, 0.f), vW(V * D, 0.f), mWp(C * D, 0.f), vWp(C * D, 0.f), mb(C, 0.f), vb(C, 0.f);
  // the table of sines and cosines, PositionalEncoding's own (setup, not timed)
  const tapegrad::Array table = tapegrad::nn::sinusoid_table(std::int64_t(T), std::int64_t(D));
  const std::vector<float> pe(table.data(), table.data() + T * D);
  // data: B rows of T ids in [1, V), the last quarter padding; label = id % C
  std::vector<std::int64_t> ids(N), labels(N);
  std::size_t count = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const bool pad = i % T >= T - T / 4;
    ids[i] = pad ? 0 : data.randint(1, std::int64_t(V));
    labels[i] = pad ? -100 : ids[i] % std::int64_t(C);
    count += !pad;
  }
  // activations and their gradients, allocated once
  std::vector<float> h(N * D), logits(N * C), dlogits(N * C), dh(N * D);
  std::vector<std::uint8_t> keep(N * D);
  std::vector<double> row_loss(N);

  std::vector<double> seconds;
  double loss = 0.0;
  for (int it = 0; it < 25; ++it) {
    const double t0 = bench::now_seconds();
    // forward: h = (W[id] * sqrt(D) + pe) * mask / (1 - p), one pass
    gen.keep_mask(keep.data(), N * D, p);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < N; ++i) {
      const float* w = W.data() + std::size_t(ids[i]) * D;
      const float* pr = pe.data() + (i % T) * D;
      const std::uint8_t* k = keep.data() + i * D;
      float* y = h.data() + i * D;
      for (std::size_t j = 0; j < D; ++j) y[j] = (w[j] * emb_scale + pr[j]) * (k[j] ? keep_scale : 0.0f);
    }
    // logits = h Wp^T + b
#pragma omp parallel
    {
      std::size_t r0, r1;
      share(N, r0, r1);
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t c = 0; c < C; ++c) logits[r * C + c] = b[c];
      if (r1 > r0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(r1 - r0), int(C), int(D), 1.0f, h.data() + r0 * D,
                    int(D), Wp.data(), int(D), 1.0f, logits.data() + r0 * C, int(C));
    }
    // cross-entropy, mean over the non-padding rows, and its gradient, in one pass
#pragma omp parallel for schedule(static)
    for (std::size_t r = 0; r < N; ++r) {
      float* d = dlogits.data() + r * C;
      if (labels[r] < 0) {
        for (std::size_t c = 0; c < C; ++c) d[c] = 0.0f;
        row_loss[r] = 0.0;
        continue;
      }
      const float* x = logits.data() + r * C;
      float m = x[0];
      for (std::size_t c = 1; c < C; ++c) m = std::max(m, x[c]);
      for (std::size_t c = 0; c < C; ++c) d[c] = tapegrad::detail::exp_f32(x[c] - m);
      double sum = 0.0;
      for (std::size_t c = 0; c < C; ++c) sum += d[c];
      const float inv = float(1.0 / sum), g = 1.0f / float(count);
      for (std::size_t c = 0; c < C; ++c) d[c] = d[c] * inv * g;
      d[labels[r]] -= g;
      row_loss[r] = -(double(x[labels[r]] - m) - std::log(sum));
    }
    loss = 0.0;
    for (std::size_t r = 0; r < N; ++r) loss += row_loss[r];
    loss /= double(count);
    // backward: db, dWp = dlogits^T h, dh = dlogits Wp
    for (std::size_t c = 0; c < C; ++c) gb[c] = 0.0f;
    for (std::size_t r = 0; r < N; ++r)
      for (std::size_t c = 0; c < C; ++c) gb[c] += dlogits[r * C + c];
#pragma omp parallel
    {
      std::size_t c0, c1, r0, r1;
      share(D, c0, c1);
      if (c1 > c0)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(C), int(c1 - c0), int(N), 1.0f, dlogits.data(), int(C),
                    h.data() + c0, int(D), 0.0f, gWp.data() + c0, int(D));
      share(N, r0, r1);
      if (r1 > r0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(r1 - r0), int(D), int(C), 1.0f,
                    dlogits.data() + r0 * C, int(C), Wp.data(), int(D), 0.0f, dh.data() + r0 * D, int(D));
    }
    // dropout backward and the dense embedding gradient, one pass: each thread owns a block of
    // rows of gW, zero-fills it and adds the non-padding positions whose id falls in it
#pragma omp parallel
    {
      std::size_t k0, k1;
      share(V, k0, k1);
      std::fill(gW.begin() + std::ptrdiff_t(k0 * D), gW.begin() + std::ptrdiff_t(k1 * D), 0.0f);
      const float f = keep_scale * emb_scale;
      for (std::size_t i = 0; i < N; ++i) {
        const auto k = std::size_t(ids[i]);
        if (k == 0 || k < k0 || k >= k1) continue;
        float* gw = gW.data() + k * D;
        const float* g = dh.data() + i * D;
        const std::uint8_t* m = keep.data() + i * D;
        for (std::size_t j = 0; j < D; ++j) gw[j] += m[j] ? g[j] * f : 0.0f;
      }
    }
    // Adam, dense
    adam(W.data(), gW.data(), mW.data(), vW.data(), V * D, it + 1);
    adam(Wp.data(), gWp.data(), mWp.data(), vWp.data(), C * D, it + 1);
    adam(b.data(), gb.data(), mb.data(), vb.data(), C, it + 1);
    const double t1 = bench::now_seconds();
    if (it >= 5) seconds.push_back(t1 - t0);
  }
  char extra[64];
  std::snprintf(extra, sizeof extra, " loss=%.4f", loss);
  bench::print_ms(std::string("W1-") + s.name + "-floor", threads, seconds, 5, extra);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv);
  omp_set_num_threads(args.threads);
  openblas_set_num_threads(1);                   // one pool of threads: OpenMP's
  for (const Size& s : kSizes)
    if (args.wants(std::string("W1-") + s.name + "-floor")) run(s, args.threads);
  return 0;
}
