// src/kernels/layer_norm.cpp
//
// Layer norm's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths is the reference kernels' (src/ops/layer_norm.cpp); what differs is
// how it runs:
// - Row statistics are summed in double in four interleaved lanes (element i in lane i % 4, the
//   lanes added at the end): a fixed order that vectorises, where one running double sum waits for
//   the previous addition at every element. The forward takes four rows' statistics side by side,
//   so that their chains of additions overlap.
// - The forward makes two passes over each row (the statistics, then the output), the backward
//   two more (two row sums, then dx), instead of the ten or so recorded ops the formula would take.
// - Threads: rows are split over the pool in blocks of kBlockRows fixed by the shape; the sums over
//   rows that dweight and dbias need are made per block, then added block by block in order, so
//   the result does not depend on the thread count.
#include <algorithm>
#include <cmath>

#include "scratch.hpp"
#include "../core/parallel.hpp"
#include "../ops/layer_norm_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error \
    "src/kernels/layer_norm.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// rows per block of the backward's column sums (and a thread's least share)
constexpr std::size_t kBlockRows = 64;

// Four doubles as one value (GCC's and Clang's vector extension): the four lanes of a row's sum,
// one AVX register or two SSE ones. widen reads four floats from unaligned memory.
using Lanes = double __attribute__((vector_size(32)));
using Float4 = float __attribute__((vector_size(16), aligned(4), may_alias));
#pragma GCC diagnostic ignored "-Wpsabi"  // Lanes never crosses a call: every use is inlined
[[gnu::always_inline]] inline Lanes widen(const float* p) {
  return __builtin_convertvector(*reinterpret_cast<const Float4*>(p), Lanes);
}
// The row's sum: its lanes added as (0 + 1) + (2 + 3).
[[gnu::always_inline]] inline double total(Lanes lane) {
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

// The mean and the sum of centred squares of R rows of x (each N long) side by side. Each row's
// sums keep their own four lanes (element i in lane i % 4, then their total), so its statistics
// are the bits it would get alone; the R rows' chains of additions run together, so each
// addition's latency hides behind the other rows' (one row alone waits for its previous addition
// every four elements).
template <std::size_t R>
void row_statistics(const float* x, std::size_t N, double* mean, double* squares) {
  Lanes lane[R];
  for (std::size_t r = 0; r < R; ++r) lane[r] = Lanes{0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= N; i += 4)
    for (std::size_t r = 0; r < R; ++r) lane[r] += widen(x + r * N + i);
  for (; i < N; ++i)
    for (std::size_t r = 0; r < R; ++r) lane[r][i % 4] += x[r * N + i];
  for (std::size_t r = 0; r < R; ++r) {
    mean[r] = total(lane[r]) / double(N);
    lane[r] = Lanes{0.0, 0.0, 0.0, 0.0};
  }
  for (i = 0; i + 4 <= N; i += 4)
    for (std::size_t r = 0; r < R; ++r) {
      const Lanes centred = widen(x + r * N + i) - mean[r];
      lane[r] += centred * centred;
    }
  for (; i < N; ++i)
    for (std::size_t r = 0; r < R; ++r) {
      const double centred = x[r * N + i] - mean[r];
      lane[r][i % 4] += centred * centred;
    }
  for (std::size_t r = 0; r < R; ++r) squares[r] = total(lane[r]);
}

// Rows whose statistics are taken together.
constexpr std::size_t kRowGroup = 4;

// The formula: layer_norm_forward's.
void forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
             float* k, std::size_t rows, std::size_t N, double eps, bool annotated) {
  detail::parallel_for(rows, kBlockRows, [&](std::size_t first, std::size_t last) {
    for (std::size_t row0 = first; row0 < last; row0 += kRowGroup) {
      const std::size_t group = std::min(kRowGroup, last - row0);
      double m[kRowGroup], sq[kRowGroup];
      if (group == kRowGroup)
        row_statistics<kRowGroup>(x + row0 * N, N, m, sq);
      else
        for (std::size_t r = 0; r < group; ++r)
          row_statistics<1>(x + (row0 + r) * N, N, m + r, sq + r);
      for (std::size_t r = 0; r < group; ++r) {
        const std::size_t row = row0 + r;
        const float* xr = x + row * N;
        float* yr = y + row * N;
        double d, kk;
        if (!annotated) {
          d = std::sqrt(sq[r] / double(N) + eps);
          kk = 1.0 / double(N);
        } else {
          const double s = std::sqrt(sq[r] / double(N - 1));  // N == 1: 0/0, NaN like torch.std
          d = s + eps;
          kk = d / (double(N - 1) * s);
        }
        const auto mf = static_cast<float>(m[r]), rs = static_cast<float>(1.0 / d);
        mean[row] = mf;
        rstd[row] = rs;
        k[row] = static_cast<float>(kk);
        for (std::size_t i = 0; i < N; ++i) {
          const float xhat = (xr[i] - mf) * rs;
          yr[i] = (w ? w[i] * xhat : xhat) + (b ? b[i] : 0.0f);
        }
      }
    }
  });
}

// One block of rows [row, end): dx, and the block's column sums added into dw_block, db_block.
void backward_block(const float* dy, const float* x, const float* w, const float* mean,
                    const float* rstd, const float* k, float* dx, double* dw, double* db,
                    std::size_t row, std::size_t end, std::size_t N, float* g, float* xhat) {
  for (; row < end; ++row) {
    const float* dyr = dy + row * N;
    const float* xr = x + row * N;
    const float m = mean[row], r = rstd[row];
    for (std::size_t i = 0; i < N; ++i) {
      xhat[i] = (xr[i] - m) * r;
      g[i] = w ? dyr[i] * w[i] : dyr[i];
    }
    if (dw)
      for (std::size_t i = 0; i < N; ++i) dw[i] += double(dyr[i]) * xhat[i];
    if (db)
      for (std::size_t i = 0; i < N; ++i) db[i] += dyr[i];
    if (!dx) continue;
    Lanes lane_g = {0.0, 0.0, 0.0, 0.0}, lane_gx = lane_g;  // sum g, sum g * xhat
    std::size_t i = 0;
    for (; i + 4 <= N; i += 4) {
      const Lanes gi = widen(g + i);
      lane_g += gi;
      lane_gx += gi * widen(xhat + i);
    }
    for (; i < N; ++i) {
      lane_g[i % 4] += g[i];
      lane_gx[i % 4] += double(g[i]) * xhat[i];
    }
    const double sum_g = total(lane_g), sum_gx = total(lane_gx);
    const auto mean_g = static_cast<float>(sum_g / double(N));
    const auto kg = static_cast<float>(k[row] * sum_gx);
    float* dxr = dx + row * N;
    for (std::size_t j = 0; j < N; ++j) dxr[j] = r * (g[j] - mean_g - xhat[j] * kg);
  }
}

// The formula: layer_norm_backward's.
void backward(const float* dy, const float* x, const float* w, const float* mean, const float* rstd,
              const float* k, float* dx, float* dw, float* db, std::size_t rows, std::size_t N) {
  const std::size_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  detail::Scratch<double> dw_blocks(dw ? blocks * N : 0), db_blocks(db ? blocks * N : 0);
  detail::parallel_for(blocks, 1, [&](std::size_t first_block, std::size_t last_block) {
    detail::Scratch<float> g(N), xhat(N);
    for (std::size_t blk = first_block; blk < last_block; ++blk)
      backward_block(dy, x, w, mean, rstd, k, dx, dw ? &dw_blocks[blk * N] : nullptr,
                     db ? &db_blocks[blk * N] : nullptr, blk * kBlockRows,
                     std::min(rows, (blk + 1) * kBlockRows), N, g.data(), xhat.data());
  });
  for (auto [out, sums] : {std::pair{dw, &dw_blocks}, std::pair{db, &db_blocks}}) {
    if (!out) continue;
    for (std::size_t i = 0; i < N; ++i) {  // the blocks' sums, block by block
      double total = 0.0;
      for (std::size_t blk = 0; blk < blocks; ++blk) total += (*sums)[blk * N + i];
      out[i] = static_cast<float>(total);
    }
  }
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::layer_norm_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::layer_norm_backward, backward);
