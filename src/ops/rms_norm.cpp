// src/ops/rms_norm.cpp
//
// RMSNorm as one fused op: the checks, the forward kernel, and a recorded backward kernel. The
// maths is in the reference kernels below (read them first); src/kernels/rms_norm.cpp has their
// fast versions, picked for the CPU by kernels::pick (docs/kernels.md). x is viewed as (rows, N)
// with N = prod(normalized_shape), rows contiguous. Saved for backward: x, weight, and per row
// rstd = 1 / sqrt(mean(x^2) + eps).
#include "tapegrad/ops/rms_norm.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "rms_norm_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/layer_norm.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// One row at a time, no threads. The fast versions make the same float operations and add every
// sum in the same order, so they give the same bits (docs/semantics.md#kernel-sets).

// rstd = 1 / sqrt(sum(x^2) / N + eps)      xhat = x * rstd      y = xhat * w
// (sum(x^2) in double, so the mean square carries no float rounding of its own; PyTorch sums in
// float32, and the two agree to a few ulps.)
void rms_norm_forward(const float* x, const float* w, float* y, float* rstd, std::size_t rows,
                      std::size_t N, double eps) {
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
void rms_norm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                       float* dx, float* dw, std::size_t rows, std::size_t N) {
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

// ---- the op -------------------------------------------------------------------------------------

namespace {
std::string list_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}
}  // namespace

Tensor rms_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                const Tensor& weight, std::optional<double> eps_or_default) {
  const std::string where = autograd::where("rms_norm");
  const double eps = eps_or_default.value_or(std::numeric_limits<float>::epsilon());
  check_norm_options(normalized_shape, eps, where);  // layer_norm's checks and texts
  const Shape norm(normalized_shape.begin(), normalized_shape.end());
  const Shape& sx = x.shape();
  bool fits = sx.size() >= norm.size();
  for (std::size_t i = 0; fits && i < norm.size(); ++i)
    fits = sx[sx.size() - norm.size() + i] == norm[i];
  if (!fits)
    fail<ShapeError>("Given normalized_shape=", list_str(norm), ", expected input with shape [*, ",
                     list_str(norm).substr(1), ", but got input of size", list_str(sx), " | ",
                     where, ": expected x to end with ", norm, ", got ", sx);
  if (weight.defined() && weight.shape() != norm)
    fail<ShapeError>(
        "Expected weight to be of same shape as normalized_shape, but got weight of "
        "shape ",
        list_str(weight.shape()), " and normalized_shape = ", list_str(norm), " | ", where,
        ": expected weight of shape ", norm, ", got ", weight.shape());

  std::size_t N = 1;
  for (std::size_t n : norm) N *= n;
  const std::size_t rows = N == 0 ? 0 : x.numel() / N;
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<rms_norm_forward>();
  const auto backward_kernel = kernels::pick<rms_norm_backward>();
  std::vector<float> rstd(rows);
  Array out = Array::from_shape(sx);
  const float* w = weight.defined() ? weight.data().data() : nullptr;
  forward(x.data().data(), w, out.data(), rstd.data(), rows, N, eps);
  Tensor y(std::move(out));

  std::vector<Tensor> inputs{x}, saved{x};
  if (weight.defined()) {
    inputs.push_back(weight);
    saved.push_back(weight);
  }
  auto backward = [x, weight, rstd = std::move(rstd), backward_kernel, rows, N](Array dy) {
    const bool want_x = x.requires_grad(), want_w = weight.defined() && weight.requires_grad();
    Array dx = want_x ? Array::from_shape(x.shape()) : Array();
    Array dw = want_w ? Array::from_shape(weight.shape()) : Array();
    backward_kernel(dy.data(), x.data().data(), weight.defined() ? weight.data().data() : nullptr,
                    rstd.data(), want_x ? dx.data() : nullptr, want_w ? dw.data() : nullptr, rows,
                    N);
    if (want_x) x.accumulate_grad(std::move(dx), "rms_norm");
    if (want_w) weight.accumulate_grad(std::move(dw), "rms_norm");
  };
  autograd::record("rms_norm", y, inputs, saved, std::move(backward));
  return y;
}

}  // namespace tapegrad::ops
