// src/ops/rms_norm.cpp
//
// RMSNorm as one fused op, forward and backward side by side: x is viewed as (rows, N) with
// N = prod(normalized_shape), rows contiguous. Per row:
//   ms = sum(x^2) / N          r = 1 / sqrt(ms + eps)          xhat = x * r          y = xhat * w
// Backward, with g = dy * w (= dL/dxhat), from dr/dx_j = -r^3 x_j / N:
//   dx_j = r * (g_j - xhat_j * sum_i(g_i * xhat_i) / N)
//   dw_j = sum over rows of dy_j * xhat_j
// The sums over a row are made in double, so mean(x^2) carries no float rounding of its own (the
// PyTorch formula sums in float32; the two agree to a few ulps). Rows are processed one after
// another in plain loops; dw adds the rows in order, so the result is the same on every run.
#include "tapegrad/ops/rms_norm.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/layer_norm.hpp"

namespace tapegrad::ops {

namespace {
// y and, per row, r = 1 / sqrt(mean(x^2) + eps).
void rms_norm_forward(const float* x, const float* w, float* y, float* r, std::size_t rows,
                      std::size_t N, double eps) {
  for (std::size_t row = 0; row < rows; ++row) {
    const float* xr = x + row * N;
    float* yr = y + row * N;
    double sq = 0.0;
    for (std::size_t i = 0; i < N; ++i) sq += double(xr[i]) * double(xr[i]);
    r[row] = static_cast<float>(1.0 / std::sqrt(sq / double(N) + eps));
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = xr[i] * r[row];
      yr[i] = w ? xhat * w[i] : xhat;
    }
  }
}

// dx and dw may each be null (not wanted); dw (N) is summed in double.
void rms_norm_backward(const float* dy, const float* x, const float* w, const float* r, float* dx,
                       double* dw, std::size_t rows, std::size_t N) {
  for (std::size_t row = 0; row < rows; ++row) {
    const float* dyr = dy + row * N;
    const float* xr = x + row * N;
    // forward: xhat = x * r,  y = xhat * w
    double sum_gx = 0.0;
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = xr[i] * r[row];
      const float g = w ? dyr[i] * w[i] : dyr[i];
      sum_gx += double(g) * double(xhat);
      if (dw) dw[i] += double(dyr[i]) * double(xhat);
    }
    if (!dx) continue;
    const auto mean_gx = static_cast<float>(sum_gx / double(N));
    float* dxr = dx + row * N;
    for (std::size_t i = 0; i < N; ++i) {
      const float xhat = xr[i] * r[row];
      const float g = w ? dyr[i] * w[i] : dyr[i];
      dxr[i] = r[row] * (g - xhat * mean_gx);
    }
  }
}

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
  std::vector<float> r(rows);
  Array out = Array::from_shape(sx);
  const float* w = weight.defined() ? weight.data().data() : nullptr;
  rms_norm_forward(x.data().data(), w, out.data(), r.data(), rows, N, eps);
  Tensor y(std::move(out));

  std::vector<Tensor> inputs{x}, saved{x};
  if (weight.defined()) {
    inputs.push_back(weight);
    saved.push_back(weight);
  }
  autograd::record("rms_norm", y, inputs, saved, [x, weight, r = std::move(r), rows, N](Array dy) {
    const bool want_x = x.requires_grad();
    const bool want_w = weight.defined() && weight.requires_grad();
    Array dx = want_x ? Array::from_shape(x.shape()) : Array();
    std::vector<double> dw(want_w ? N : 0, 0.0);
    rms_norm_backward(dy.data(), x.data().data(), weight.defined() ? weight.data().data() : nullptr,
                      r.data(), want_x ? dx.data() : nullptr, want_w ? dw.data() : nullptr, rows,
                      N);
    if (want_x) x.accumulate_grad(std::move(dx), "rms_norm");
    if (want_w) {
      Array d = Array::from_shape(weight.shape());
      for (std::size_t i = 0; i < N; ++i) d.data()[i] = static_cast<float>(dw[i]);
      weight.accumulate_grad(std::move(d), "rms_norm");
    }
  });
  return y;
}

}  // namespace tapegrad::ops
