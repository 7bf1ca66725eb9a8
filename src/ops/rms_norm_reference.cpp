// src/ops/rms_norm_reference.cpp
//
// RMSNorm's reference kernels: the maths as plain loops, one row at a time, no threads, no
// intrinsics (docs/kernels.md: read these first). x is seen as (rows, N). The fast kernels
// (rms_norm_fast.cpp) make the same float operations and add every sum in the same order, so
// they give the same bits (docs/semantics.md#kernel-sets).
#include <cmath>
#include <vector>

#include "rms_norm_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// rstd = 1 / sqrt(sum(x^2) / N + eps)      xhat = x * rstd      y = xhat * w
// (sum(x^2) in double, so the mean square carries no float rounding of its own; PyTorch sums in
// float32, and the two agree to a few ulps.)
void forward(const float* x, const float* w, float* y, float* rstd, std::size_t rows, std::size_t N,
             double eps) {
  for (std::size_t row = 0; row < rows; ++row) {
    const float* xr = x + row * N;
    double sq = 0.0;
    for (std::size_t i = 0; i < N; ++i) sq += double(xr[i]) * double(xr[i]);
    rstd[row] = float(1.0 / std::sqrt(sq / double(N) + eps));
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = xr[i] * rstd[row];
      y[row * N + i] = w ? xhat * w[i] : xhat;
    }
  }
}

// With g = dy * w (= dL/dxhat), and drstd/dx_j = -rstd^3 x_j / N, per row:
//   dx_j = rstd * (g_j - xhat_j * sum_i(g_i * xhat_i) / N)
//   dw_j = sum over rows of dy_j * xhat_j
void backward(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
              float* dw, std::size_t rows, std::size_t N) {
  std::vector<double> dw_sum(N, 0.0);
  for (std::size_t row = 0; row < rows; ++row) {
    const float *dyr = dy + row * N, *xr = x + row * N;
    double sum_gx = 0.0;
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = xr[i] * rstd[row], g = w ? dyr[i] * w[i] : dyr[i];
      sum_gx += double(g) * double(xhat);
      dw_sum[i] += double(dyr[i]) * double(xhat);
    }
    const auto mean_gx = float(sum_gx / double(N));
    for (std::size_t i = 0; dx && i < N; ++i) {
      const float xhat = xr[i] * rstd[row], g = w ? dyr[i] * w[i] : dyr[i];
      dx[row * N + i] = rstd[row] * (g - xhat * mean_gx);
    }
  }
  for (std::size_t i = 0; dw && i < N; ++i) dw[i] = float(dw_sum[i]);
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const RMSNormKernels rms_norm{forward, backward};

}  // namespace tapegrad::kernels::reference
