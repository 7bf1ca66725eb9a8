// bench/w1_floor.cpp: the floor of the W1 training step on this machine: the same step as
// w1_training_step (same model, sizes, data, initial weights, dropout masks and Adam, and the same
// numbers: bench/compare checks that both print the same losses), written by hand as fast as we
// know how, with the same rules: OpenBLAS for the three products, dense Adam, float32, no
// reassociation of the arithmetic. tapegrad's figures are read against it: the framework's price
// is the distance between the two.
//
// Where the time goes, and what this program does about it (N = B * T positions of D floats):
//   forward   h = (W[ids] * sqrt(D) + pe) * m: ONE pass, reading each embedding row and writing h;
//             m, the dropout multiplier, is computed on the fly from the counter-based stream
//             (src/core/philox.hpp, 256 elements at a time in L1) and never stored.
//   logits    = h Wp^T + b (sgemm); the cross-entropy and its gradient in one pass over each row.
//   backward  db, dWp = dlogits^T h and dh = dlogits Wp (sgemm); then ONE pass from dh into the
//             embedding gradient: dW[ids[p]] += (dh[p] * m[p]) * sqrt(D), the mask computed again,
//             the row of the next positions prefetched; a row's first contribution is written, not
//             added to a zero, and only the rows no position touches are zero-filled.
//   Adam      one pass over each parameter at memory bandwidth.
// Nothing is allocated inside the step. Threads: tapegrad's pool (src/core/parallel.hpp), which every
// loop here shares out the way tapegrad's kernels do; the products go through tapegrad's own
// sgemm wrapper (src/core/gemm.hpp), because OpenBLAS may round an element differently when the
// call is cut differently, and the losses must be tapegrad's to the bit.
//
// Prints "W1-S-floor threads=T median_ms=..." (and M, L): 20 steps after 5 warm-up steps.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <tapegrad/nn/positional_encoding.hpp>
#include <tapegrad/core/random.hpp>

#include "../src/kernels/exp_f32.hpp"   // the same vectorised e^x as tapegrad's cross_entropy
#include "../src/core/gemm.hpp"  // tapegrad's sgemm call, cut by shape alone
#include "../src/core/parallel.hpp"  // tapegrad's thread pool
#include "../src/core/philox.hpp"    // the dropout mask's counter-based stream
#include "bench_common.hpp"

namespace {

using tapegrad::detail::parallel_for;

struct Size {
  const char* name;
  std::size_t V, D, B, T, C;
};
constexpr Size kSizes[] = {
    {"S", 1000, 64, 16, 32, 16}, {"M", 10000, 512, 32, 128, 16}, {"L", 32000, 512, 64, 256, 64}};

// Adam (lr 1e-3, betas 0.9 / 0.98, eps 1e-9) at step t, over n elements, in tapegrad's order of
// operations: m + w1 (g - m), v b2 + w2 g g, theta + ((-lr / bc1) m) / (sqrt(v) / sqrt(bc2) + eps).
void adam(float* theta, const float* grad, float* m, float* v, std::size_t n, int t) {
  const double beta1 = 0.9, beta2 = 0.98;
  const double bc1 = 1.0 - std::pow(beta1, double(t)), bc2 = 1.0 - std::pow(beta2, double(t));
  const float neg_step = float(-(1e-3 / bc1)), sqrt_bc2 = float(std::sqrt(bc2)), eps = float(1e-9);
  const float w1 = float(1.0 - beta1), b2 = float(beta2), w2 = float(1.0 - beta2);
  // The scalars are captured by value: read through a reference they might alias theta, m or v,
  // and the compiler would reload them after every store instead of vectorising the loop.
  parallel_for(n, std::size_t{1} << 16, [=](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const float g = grad[i];
      const float mi = m[i] + w1 * (g - m[i]);
      const float vi = v[i] * b2 + w2 * g * g;
      m[i] = mi;
      v[i] = vi;
      theta[i] = theta[i] + neg_step * mi / (std::sqrt(vi) / sqrt_bc2 + eps);
    }
  });
}

void run(const Size& s, int threads) {
  const std::size_t V = s.V, D = s.D, C = s.C, N = s.B * s.T, T = s.T;
  const double p = 0.1;
  const float keep_scale = 1.0f / float(1.0 - p), emb_scale = float(std::sqrt(double(D)));
  const std::uint32_t threshold = tapegrad::detail::keep_threshold(p);

  // Initial weights: the draws of w1_training_step's model, in its order (Embedding N(0, 1) with
  // the padding row zeroed, then Linear's weight and bias U(-1/sqrt(D), 1/sqrt(D))); then the
  // Dropout's seed, which it takes from the same generator at its first training forward.
  tapegrad::Generator gen(0), data(1);
  std::vector<float> W(V * D), Wp(C * D), b(C);
  for (float& w : W) w = float(gen.normal());
  std::fill_n(W.begin(), D, 0.0f);
  const double bound = 1.0 / std::sqrt(double(D));
  for (float& w : Wp) w = float(-bound + (bound - -bound) * gen.uniform_double());
  for (float& w : b) w = float(-bound + (bound - -bound) * gen.uniform_double());
  const std::uint64_t seed = gen.next_u64();
  std::vector<float> gW(V * D), gWp(C * D), gb(C);
  std::vector<float> mW(V * D, 0.f), vW(V * D, 0.f), mWp(C * D, 0.f), vWp(C * D, 0.f), mb(C, 0.f),
      vb(C, 0.f);
  const tapegrad::Array table = tapegrad::nn::sinusoid_table(std::int64_t(T), std::int64_t(D));
  const float* pe = table.data();

  // Data: B rows of T ids in [1, V), the last quarter padding; label = id % C, -100 on padding.
  std::vector<std::int64_t> ids(N), labels(N);
  std::size_t count = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const bool pad = i % T >= T - T / 4;
    ids[i] = pad ? 0 : data.randint(1, std::int64_t(V));
    labels[i] = pad ? -100 : ids[i] % std::int64_t(C);
    count += !pad;
  }
  // Which positions hold each id, in position order (a counting sort, once: the data is fixed);
  // the scatter then walks the gradient's rows in order, each row written once.
  std::vector<std::size_t> first_of(V + 1, 0), positions;
  for (std::size_t i = 0; i < N; ++i) ++first_of[std::size_t(ids[i]) + 1];
  for (std::size_t k = 0; k < V; ++k) first_of[k + 1] += first_of[k];
  positions.resize(N);
  {
    std::vector<std::size_t> next(first_of.begin(), first_of.end() - 1);
    for (std::size_t i = 0; i < N; ++i) positions[next[std::size_t(ids[i])]++] = i;
  }

  std::vector<float> h(N * D), logits(N * C), dlogits(N * C), dh(N * D);
  std::vector<double> row_loss(N);
  const std::size_t rows_grain = std::max<std::size_t>(1, (std::size_t{1} << 16) / D);

  std::vector<double> seconds;
  float loss = 0.0f;
  for (int it = 0; it < 25; ++it) {
    const double t0 = bench::now_seconds();
    const std::uint64_t call = std::uint64_t(it);
    // forward: h = (W[id] * sqrt(D) + pe) * m, one pass over the positions
    parallel_for(N, rows_grain, [&](std::size_t begin, std::size_t end) {
      alignas(64) float buffer[tapegrad::detail::kMaskBuffer];
      const float c = emb_scale;  // a local: see adam()
      for (std::size_t i = begin; i < end; ++i) {
        const float* w = W.data() + std::size_t(ids[i]) * D;
        const float* pr = pe + (i % T) * D;
        float* y = h.data() + i * D;
        for (std::size_t j0 = 0; j0 < D; j0 += tapegrad::detail::kMaskChunk) {
          const std::size_t len = std::min(tapegrad::detail::kMaskChunk, D - j0);
          const float* m = tapegrad::detail::mask_chunk(seed, call, threshold, keep_scale,
                                                        i * D + j0, len, buffer);
          for (std::size_t j = 0; j < len; ++j) y[j0 + j] = (w[j0 + j] * c + pr[j0 + j]) * m[j];
        }
      }
    });
    // logits = h Wp^T + b: every row starts as b, the product adds to it
    for (std::size_t r = 0; r < N; ++r) std::copy_n(b.data(), C, logits.data() + r * C);
    tapegrad::detail::gemm(false, true, N, C, D, 1.0f, h.data(), D, Wp.data(), D, 1.0f,
                           logits.data(), C);
    // cross-entropy (mean over the non-padding rows) and its gradient, one pass per row
    const float g = float(1.0 / double(count));
    parallel_for(N, std::max<std::size_t>(1, (std::size_t{1} << 16) / C),
                 [&](std::size_t begin, std::size_t end) {
                   float e[256];
                   const float gr = g;  // a local: see adam()
                   for (std::size_t r = begin; r < end; ++r) {
                     float* d = dlogits.data() + r * C;
                     if (labels[r] < 0) {
                       std::fill_n(d, C, 0.0f);
                       row_loss[r] = 0.0;
                       continue;
                     }
                     const float* x = logits.data() + r * C;
                     float mx = x[0];
                     for (std::size_t c = 1; c < C; ++c) mx = std::max(mx, x[c]);
                     for (std::size_t c = 0; c < C; ++c)
                       e[c] = tapegrad::detail::exp_f32(x[c] - mx);
                     double sum = 0.0;
                     for (std::size_t c = 0; c < C; ++c) sum += e[c];
                     const float log_sum = float(std::log(sum));
                     const std::size_t t = std::size_t(labels[r]);
                     row_loss[r] = -((x[t] - mx) - log_sum);
                     for (std::size_t c = 0; c < C; ++c)
                       d[c] = tapegrad::detail::exp_f32((x[c] - mx) - log_sum) * gr;
                     d[t] -= gr;
                   }
                 });
    double total = 0.0;
    for (std::size_t r = 0; r < N; ++r) total += float(row_loss[r]);
    loss = float(total / double(count));
    // backward: db (column sums in double, row by row), dWp = dlogits^T h, dh = dlogits Wp
    {
      std::vector<double>& sums = row_loss;  // reused: N >= C
      std::fill_n(sums.begin(), C, 0.0);
      for (std::size_t r = 0; r < N; ++r)
        for (std::size_t c = 0; c < C; ++c) sums[c] += dlogits[r * C + c];
      for (std::size_t c = 0; c < C; ++c) gb[c] = float(sums[c]);
    }
    tapegrad::detail::gemm(true, false, C, D, N, 1.0f, dlogits.data(), C, h.data(), D, 0.0f,
                           gWp.data(), D);
    tapegrad::detail::gemm(false, false, N, D, C, 1.0f, dlogits.data(), C, Wp.data(), D, 0.0f,
                           dh.data(), D);
    // dropout backward and the embedding gradient in one pass over the gradient's rows:
    // dW[k] = 0 + sum over k's positions p (in order) of (dh[p] * m[p]) * sqrt(D); the pad row 0
    // and rows no position holds are zero.
    parallel_for(V, rows_grain, [&](std::size_t lo, std::size_t hi) {
      alignas(64) float buffer[tapegrad::detail::kMaskBuffer];
      const float c = emb_scale;  // a local: see adam()
      for (std::size_t k = lo; k < hi; ++k) {
        float* row = gW.data() + k * D;
        const std::size_t from = first_of[k], to = first_of[k + 1];
        if (k == 0 || from == to) {
          std::fill_n(row, D, 0.0f);
          continue;
        }
        for (std::size_t q = from; q < to; ++q) {
          const std::size_t i = positions[q];
          if (q + 1 < to) __builtin_prefetch(dh.data() + positions[q + 1] * D);
          const float* gp = dh.data() + i * D;
          for (std::size_t j0 = 0; j0 < D; j0 += tapegrad::detail::kMaskChunk) {
            const std::size_t len = std::min(tapegrad::detail::kMaskChunk, D - j0);
            const float* m = tapegrad::detail::mask_chunk(seed, call, threshold, keep_scale,
                                                          i * D + j0, len, buffer);
            float* r = row + j0;
            const float* gj = gp + j0;
            if (q == from)
              for (std::size_t j = 0; j < len; ++j) r[j] = 0.0f + (gj[j] * m[j]) * c;
            else
              for (std::size_t j = 0; j < len; ++j) r[j] += (gj[j] * m[j]) * c;
          }
        }
      }
    });
    // Adam, dense
    adam(W.data(), gW.data(), mW.data(), vW.data(), V * D, it + 1);
    adam(Wp.data(), gWp.data(), mWp.data(), vWp.data(), C * D, it + 1);
    adam(b.data(), gb.data(), mb.data(), vb.data(), C, it + 1);
    const double t1 = bench::now_seconds();
    if (it >= 5) seconds.push_back(t1 - t0);
  }
  char extra[64];
  std::snprintf(extra, sizeof extra, " loss=%.4f loss_bits=%08x", loss,
                std::bit_cast<std::uint32_t>(loss));
  bench::print_ms(std::string("W1-") + s.name + "-floor", threads, seconds, 5, extra);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv);  // sets tapegrad's pool to --threads
  for (const Size& s : kSizes)
    if (args.wants(std::string("W1-") + s.name + "-floor")) run(s, args.threads);
  return 0;
}
