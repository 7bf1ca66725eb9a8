// src/kernels/rms_norm.cpp
//
// RMSNorm's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths and the order of every sum are the reference kernels'
// (src/ops/rms_norm.cpp), so every set gives the reference's bits; what differs is how the rows
// are shared out:
// - the forward's rows are independent and split over the threads;
// - the backward makes dx row by row, split over the threads, then dweight column by column:
//   each column's sum over the rows is added in row order, so columns can be split over the
//   threads and the inner loop (over columns) vectorises, where one pass doing both waits on the
//   row's running sum at every element.
#include <algorithm>
#include <cmath>

#include "scratch.hpp"
#include "../core/parallel.hpp"
#include "../ops/rms_norm_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/rms_norm.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// The formula: rms_norm_forward's.
void forward(const float* x, const float* w, float* y, float* rstd, std::size_t rows, std::size_t N,
             double eps) {
  detail::parallel_for(rows, detail::rows_grain(N), [&](std::size_t first, std::size_t last) {
    for (std::size_t row = first; row < last; ++row) {
      const float* xr = x + row * N;
      float* yr = y + row * N;
      double sq = 0.0;
      for (std::size_t i = 0; i < N; ++i) sq += double(xr[i]) * double(xr[i]);
      const auto r = static_cast<float>(1.0 / std::sqrt(sq / double(N) + eps));
      rstd[row] = r;
      for (std::size_t i = 0; i < N; ++i) {
        const float xhat = xr[i] * r;
        yr[i] = w ? xhat * w[i] : xhat;
      }
    }
  });
}

// dx for rows [first, last).
void backward_dx(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
                 std::size_t first, std::size_t last, std::size_t N) {
  for (std::size_t row = first; row < last; ++row) {
    const float *dyr = dy + row * N, *xr = x + row * N;
    const float r = rstd[row];
    double sum_gx = 0.0;
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = xr[i] * r, g = w ? dyr[i] * w[i] : dyr[i];
      sum_gx += double(g) * double(xhat);
    }
    const auto mean_gx = static_cast<float>(sum_gx / double(N));
    float* dxr = dx + row * N;
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = xr[i] * r, g = w ? dyr[i] * w[i] : dyr[i];
      dxr[i] = r * (g - xhat * mean_gx);
    }
  }
}

// dweight for columns [first, last): every row's dy * xhat added in row order, in double.
void backward_dweight(const float* dy, const float* x, const float* rstd, float* dw,
                      std::size_t first, std::size_t last, std::size_t rows, std::size_t N) {
  detail::Scratch<double> sum(last - first, 0.0);
  for (std::size_t row = 0; row < rows; ++row) {
    const float *dyr = dy + row * N + first, *xr = x + row * N + first;
    const float r = rstd[row];
    for (std::size_t i = 0; i < last - first; ++i) {
      const float xhat = xr[i] * r;
      sum[i] += double(dyr[i]) * double(xhat);
    }
  }
  for (std::size_t i = 0; i < last - first; ++i) dw[first + i] = static_cast<float>(sum[i]);
}

// The formula: rms_norm_backward's.
void backward(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
              float* dw, std::size_t rows, std::size_t N) {
  if (dx)
    detail::parallel_for(rows, detail::rows_grain(N), [&](std::size_t first, std::size_t last) {
      backward_dx(dy, x, w, rstd, dx, first, last, N);
    });
  if (dw)
    detail::parallel_for(N, std::max<std::size_t>(16, detail::rows_grain(rows)),
                         [&](std::size_t first, std::size_t last) {
                           backward_dweight(dy, x, rstd, dw, first, last, rows, N);
                         });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::rms_norm_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::rms_norm_backward, backward);
