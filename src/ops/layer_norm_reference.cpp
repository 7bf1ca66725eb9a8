// src/ops/layer_norm_reference.cpp
//
// Layer norm's reference kernels: the maths as plain loops, one row at a time, no threads, no
// intrinsics (docs/kernels.md: read these first). x is seen as (rows, N). The fast kernels
// (layer_norm_fast.cpp) compute the same values in the same float operations; they add the row
// and column sums (in double) in another order, which can move a result by one float rounding
// (docs/semantics.md#kernel-sets).
#include <cmath>
#include <vector>

#include "layer_norm_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// mean = sum(x) / N         c = x - mean          xhat = c / d = c * rstd       y = w * xhat + b
// pytorch:    d = sqrt(sum(c^2) / N + eps)                     k = 1 / N
// annotated:  s = sqrt(sum(c^2) / (N - 1)),  d = s + eps       k = d / ((N - 1) s)
// (k = dd/dc_i divided by c_i / d: what backward needs of d's dependence on x.)
void forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
             float* k, std::size_t rows, std::size_t N, double eps, bool annotated) {
  for (std::size_t row = 0; row < rows; ++row) {
    const float* xr = x + row * N;
    double sum = 0.0, sq = 0.0;
    for (std::size_t i = 0; i < N; ++i) sum += xr[i];
    const double m = sum / double(N);
    for (std::size_t i = 0; i < N; ++i) sq += (xr[i] - m) * (xr[i] - m);
    const double s = std::sqrt(sq / double(N - 1));  // N == 1: 0/0, NaN like torch.std
    const double d = annotated ? s + eps : std::sqrt(sq / double(N) + eps);
    mean[row] = float(m);
    rstd[row] = float(1.0 / d);
    k[row] = float(annotated ? d / (double(N - 1) * s) : 1.0 / double(N));
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = (xr[i] - mean[row]) * rstd[row];
      y[row * N + i] = (w ? w[i] * xhat : xhat) + (b ? b[i] : 0.0f);
    }
  }
}

// With g = dy * w (= dL/dxhat), per row:
//   dx_i = rstd * (g_i - mean(g) - xhat_i * k * sum_j(g_j * xhat_j))
//   dw_i = sum over rows of dy_i * xhat_i            db_i = sum over rows of dy_i
// (mean(g): xhat depends on every x_j through the mean; the k term: through d.)
void backward(const float* dy, const float* x, const float* w, const float* mean, const float* rstd,
              const float* k, float* dx, float* dw, float* db, std::size_t rows, std::size_t N) {
  std::vector<double> dw_sum(N, 0.0), db_sum(N, 0.0);
  for (std::size_t row = 0; row < rows; ++row) {
    const float *dyr = dy + row * N, *xr = x + row * N;
    double sum_g = 0.0, sum_gx = 0.0;
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = (xr[i] - mean[row]) * rstd[row], g = w ? dyr[i] * w[i] : dyr[i];
      sum_g += g;
      sum_gx += double(g) * xhat;
      dw_sum[i] += double(dyr[i]) * xhat;
      db_sum[i] += dyr[i];
    }
    const auto mean_g = float(sum_g / double(N)), kg = float(k[row] * sum_gx);
    for (std::size_t i = 0; dx && i < N; ++i) {
      const float xhat = (xr[i] - mean[row]) * rstd[row], g = w ? dyr[i] * w[i] : dyr[i];
      dx[row * N + i] = rstd[row] * (g - mean_g - xhat * kg);
    }
  }
  for (std::size_t i = 0; i < N; ++i) {
    if (dw) dw[i] = float(dw_sum[i]);
    if (db) db[i] = float(db_sum[i]);
  }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const LayerNormKernels layer_norm{forward, backward};

}  // namespace tapegrad::kernels::reference
