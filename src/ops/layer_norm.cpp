// src/ops/layer_norm.cpp
//
// Layer normalisation as one fused op: the checks, the forward kernel, and a recorded backward
// kernel, instead of the ten or so recorded ops (mean, sub, pow, mean, sqrt, add, div, mul, add)
// the formula would take. The maths is in the reference kernels below, layer_norm_forward and
// layer_norm_backward: one row at a time, plain loops, no threads. src/kernels/layer_norm.cpp has
// their fast versions, which kernels::pick chooses for the CPU (docs/kernels.md).
// x is viewed as (rows, N) with N = prod(normalized_shape); rows are contiguous. Saved for
// backward: x, weight, and per row the mean, rstd = 1/d and the coefficient k of the formula
// (three floats per row).
#include "tapegrad/ops/layer_norm.hpp"

#include <cmath>
#include <sstream>
#include <vector>

#include "layer_norm_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// x is seen as (rows, N). The fast versions compute the same values in the same float operations;
// they add the row and column sums (in double) in another order, which can move a result by one
// float rounding (docs/semantics.md#kernel-sets).

// mean = sum(x) / N         c = x - mean          xhat = c / d = c * rstd       y = w * xhat + b
// pytorch:    d = sqrt(sum(c^2) / N + eps)                     k = 1 / N
// annotated:  s = sqrt(sum(c^2) / (N - 1)),  d = s + eps       k = d / ((N - 1) s)
// (k = dd/dc_i divided by c_i / d: what backward needs of d's dependence on x.)
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean,
                        float* rstd, float* k, std::size_t rows, std::size_t N, double eps,
                        bool annotated) {
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
void layer_norm_backward(const float* dy, const float* x, const float* w, const float* mean,
                         const float* rstd, const float* k, float* dx, float* dw, float* db,
                         std::size_t rows, std::size_t N) {
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

// ---- the op -------------------------------------------------------------------------------------

namespace {
std::string list_str(const std::vector<std::int64_t>& v) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
  return os.str();
}

std::string list_str(const Shape& s) {
  return list_str(std::vector<std::int64_t>(s.begin(), s.end()));
}
}  // namespace

void check_norm_options(const std::vector<std::int64_t>& normalized_shape, double eps,
                        const std::string& where) {
  if (normalized_shape.empty())
    fail<ValueError>(
        "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
        "element, but got normalized_shape = [] | ",
        where, ": expected at least one dimension to normalise over, got none");
  for (std::int64_t n : normalized_shape)
    if (n < 0)
      fail<ValueError>(where, ": expected non-negative sizes in normalized_shape, got ",
                       list_str(normalized_shape));
  check<ValueError>(eps >= 0.0, where, ": expected eps >= 0, got ", eps);
}

Tensor layer_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                  const Tensor& weight, const Tensor& bias, const LayerNormFuncOptions& options) {
  const std::string where = autograd::where("layer_norm");
  check_norm_options(normalized_shape, options.eps(), where);
  const Shape norm(normalized_shape.begin(), normalized_shape.end());
  const double eps = options.eps();
  const Shape& sx = x.shape();
  bool fits = sx.size() >= norm.size();
  for (std::size_t i = 0; fits && i < norm.size(); ++i)
    fits = sx[sx.size() - norm.size() + i] == norm[i];
  if (!fits)
    fail<ShapeError>("Given normalized_shape=", list_str(normalized_shape),
                     ", expected input with shape [*, ", list_str(normalized_shape).substr(1),
                     ", but got input of size", list_str(sx), " | ", where,
                     ": expected x to end with ", norm, ", got ", sx);
  for (const auto& [t, name] : {std::pair{weight, "weight"}, std::pair{bias, "bias"}})
    if (t.defined() && t.shape() != norm)
      fail<ShapeError>("Expected ", name, " to be of same shape as normalized_shape, but got ",
                       name, " of shape ", list_str(t.shape()),
                       " and normalized_shape = ", list_str(normalized_shape), " | ", where,
                       ": expected ", name, " of shape ", norm, ", got ", t.shape());

  std::size_t N = 1;
  for (std::size_t n : norm) N *= n;
  const std::size_t rows = N == 0 ? 0 : x.numel() / N;
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<layer_norm_forward>();
  const auto backward_kernel = kernels::pick<layer_norm_backward>();
  std::vector<float> stats(3 * rows);  // per row: mean, rstd, k
  float *mean = stats.data(), *rstd = mean + rows, *k = rstd + rows;
  Array out = Array::from_shape(sx);
  const float* w = weight.defined() ? weight.data().data() : nullptr;
  const float* b = bias.defined() ? bias.data().data() : nullptr;
  forward(x.data().data(), w, b, out.data(), mean, rstd, k, rows, N, eps,
          options.variant() == LayerNormVariant::annotated);
  Tensor y(std::move(out));

  std::vector<Tensor> inputs{x}, saved{x};
  if (weight.defined()) {
    inputs.push_back(weight);
    saved.push_back(weight);
  }
  if (bias.defined()) inputs.push_back(bias);
  auto backward = [x, weight, bias, stats = std::move(stats), backward_kernel, rows, N](Array dy) {
    const bool want_x = x.requires_grad(), want_w = weight.defined() && weight.requires_grad(),
               want_b = bias.defined() && bias.requires_grad();
    Array dx = want_x ? Array::from_shape(x.shape()) : Array();
    Array dw = want_w ? Array::from_shape(weight.shape()) : Array();
    Array db = want_b ? Array::from_shape(bias.shape()) : Array();
    const float* st = stats.data();  // mean, rstd, k
    backward_kernel(dy.data(), x.data().data(), weight.defined() ? weight.data().data() : nullptr,
                    st, st + rows, st + 2 * rows, want_x ? dx.data() : nullptr,
                    want_w ? dw.data() : nullptr, want_b ? db.data() : nullptr, rows, N);
    if (want_x) x.accumulate_grad(std::move(dx), "layer_norm");
    if (want_w) weight.accumulate_grad(std::move(dw), "layer_norm");
    if (want_b) bias.accumulate_grad(std::move(db), "layer_norm");
  };
  autograd::record("layer_norm", y, inputs, saved, std::move(backward));
  return y;
}

}  // namespace tapegrad::ops
