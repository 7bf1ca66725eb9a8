// src/ops/layer_norm.cpp
//
// Layer normalisation as one fused op: a forward kernel that makes two passes over each row (the
// statistics, then the output) and a backward kernel that makes two more (two row sums, then dx),
// instead of the ten or so recorded ops (mean, sub, pow, mean, sqrt, add, div, mul, add) the
// formula would take. x is viewed as (rows, N) with N = prod(normalized_shape); rows are contiguous.
// Row statistics are summed in double, in four interleaved lanes (element i in lane i % 4, the lanes
// added at the end): a fixed order that vectorises, where one running double sum waits for the
// previous addition at every element. Saved for backward: x, weight, and per row the mean, r = 1/d
// and the coefficient k of the formula below (three floats per row).
// Threads: rows are split over the pool in blocks of kBlockRows fixed by the shape; the sums over
// rows that dweight and dbias need are made per block, then added block by block in order, so the
// result does not depend on the thread count.
#include "tapegrad/ops/layer_norm.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

namespace {
// Per-row values the backward needs besides x itself.
struct RowStats {
  std::vector<float> mean, r, k;
};

constexpr std::size_t kBlockRows =
    64;  // rows per block of the backward's column sums (and a thread's least share)

double lane_sum(const float* x, std::size_t n) {
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t l = 0; l < 4; ++l) lane[l] += x[i + l];
  for (; i < n; ++i) lane[i % 4] += x[i];
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}
double lane_centred_squares(const float* x, double mean, std::size_t n) {
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t l = 0; l < 4; ++l) lane[l] += (x[i + l] - mean) * (x[i + l] - mean);
  for (; i < n; ++i) lane[i % 4] += (x[i] - mean) * (x[i] - mean);
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

// mean = sum(x) / N                               c = x - mean
// pytorch:    d = sqrt(sum(c^2) / N + eps)        annotated:  s = sqrt(sum(c^2) / (N - 1)),  d = s + eps
// xhat = c / d  (computed as c * r, r = 1 / d)    y = w * xhat + b
// k is dd/dc_i divided by c_i / d: 1 / N for pytorch, d / ((N - 1) s) for annotated (see backward).
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, RowStats& st,
                        std::size_t rows, std::size_t N, double eps, LayerNormVariant variant) {
  detail::parallel_for(rows, kBlockRows, [&](std::size_t first, std::size_t last) {
    for (std::size_t row = first; row < last; ++row) {
      const float* xr = x + row * N;
      float* yr = y + row * N;
      const double mean = lane_sum(xr, N) / double(N);
      const double sq = lane_centred_squares(xr, mean, N);
      double d, k;
      if (variant == LayerNormVariant::pytorch) {
        d = std::sqrt(sq / double(N) + eps);
        k = 1.0 / double(N);
      } else {
        const double s = std::sqrt(sq / double(N - 1));  // N == 1: 0/0, NaN like torch.std
        d = s + eps;
        k = d / (double(N - 1) * s);
      }
      const auto m = static_cast<float>(mean), r = static_cast<float>(1.0 / d);
      st.mean[row] = m;
      st.r[row] = r;
      st.k[row] = static_cast<float>(k);
      for (std::size_t i = 0; i < N; ++i) {
        const float xhat = (xr[i] - m) * r;
        yr[i] = (w ? w[i] * xhat : xhat) + (b ? b[i] : 0.0f);
      }
    }
  });
}

// Forward, per row:  xhat = (x - mean) * r,  y = w * xhat + b.  With g = dy * w (= dL/dxhat):
//   dx_i = r * (g_i - mean(g) - xhat_i * k * sum_j(g_j * xhat_j))
//   dw_i = sum over rows of dy_i * xhat_i            db_i = sum over rows of dy_i
// dx follows from xhat depending on x through c = x - mean (the mean(g) term) and through d
// (the k term, dd/dc_i = k * c_i / d). dx, dw, db may each be null (not needed). The row sums of
// dw and db are made per block of kBlockRows rows (dw_blocks, db_blocks: (blocks, N)).
void layer_norm_backward(const float* dy, const float* x, const float* w, const RowStats& st,
                         float* dx, double* dw_blocks, double* db_blocks, std::size_t rows,
                         std::size_t N) {
  const std::size_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  detail::parallel_for(blocks, 1, [&](std::size_t first_block, std::size_t last_block) {
    std::vector<float> g(N), xhat(N);
    for (std::size_t blk = first_block; blk < last_block; ++blk) {
      double* dw = dw_blocks ? dw_blocks + blk * N : nullptr;
      double* db = db_blocks ? db_blocks + blk * N : nullptr;
      if (dw) std::fill_n(dw, N, 0.0);
      if (db) std::fill_n(db, N, 0.0);
      for (std::size_t row = blk * kBlockRows, end = std::min(rows, row + kBlockRows); row < end;
           ++row) {
        const float* dyr = dy + row * N;
        const float* xr = x + row * N;
        const float m = st.mean[row], r = st.r[row];
        for (std::size_t i = 0; i < N; ++i) {
          xhat[i] = (xr[i] - m) * r;
          g[i] = w ? dyr[i] * w[i] : dyr[i];
        }
        if (dw)
          for (std::size_t i = 0; i < N; ++i) dw[i] += double(dyr[i]) * xhat[i];
        if (db)
          for (std::size_t i = 0; i < N; ++i) db[i] += dyr[i];
        if (!dx) continue;
        const double sum_g = lane_sum(g.data(), N);
        double lane[4] = {0.0, 0.0, 0.0, 0.0};
        std::size_t i = 0;
        for (; i + 4 <= N; i += 4)
          for (std::size_t l = 0; l < 4; ++l) lane[l] += double(g[i + l]) * xhat[i + l];
        for (; i < N; ++i) lane[i % 4] += double(g[i]) * xhat[i];
        const double sum_gx = (lane[0] + lane[1]) + (lane[2] + lane[3]);
        const auto mean_g = static_cast<float>(sum_g / double(N));
        const auto kg = static_cast<float>(st.k[row] * sum_gx);
        float* dxr = dx + row * N;
        for (std::size_t j = 0; j < N; ++j) dxr[j] = r * (g[j] - mean_g - xhat[j] * kg);
      }
    }
  });
}

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
  RowStats st{std::vector<float>(rows), std::vector<float>(rows), std::vector<float>(rows)};
  Array out = Array::from_shape(sx);
  const float* w = weight.defined() ? weight.data().data() : nullptr;
  const float* b = bias.defined() ? bias.data().data() : nullptr;
  layer_norm_forward(x.data().data(), w, b, out.data(), st, rows, N, eps, options.variant());
  Tensor y(std::move(out));

  std::vector<Tensor> inputs{x}, saved{x};
  if (weight.defined()) {
    inputs.push_back(weight);
    saved.push_back(weight);
  }
  if (bias.defined()) inputs.push_back(bias);
  autograd::record(
      "layer_norm", y, inputs, saved, [x, weight, bias, st = std::move(st), rows, N](Array dy) {
        const bool want_w = weight.defined() && weight.requires_grad();
        const bool want_b = bias.defined() && bias.requires_grad();
        const std::size_t blocks = (rows + kBlockRows - 1) / kBlockRows;
        Array dx = x.requires_grad() ? Array::from_shape(x.shape()) : Array();
        std::vector<double> dw(want_w ? blocks * N : 0), db(want_b ? blocks * N : 0);
        layer_norm_backward(dy.data(), x.data().data(),
                            weight.defined() ? weight.data().data() : nullptr, st,
                            x.requires_grad() ? dx.data() : nullptr, want_w ? dw.data() : nullptr,
                            want_b ? db.data() : nullptr, rows, N);
        if (x.requires_grad()) x.accumulate_grad(std::move(dx), "layer_norm");
        for (auto& [t, sums, want] :
             {std::tuple{weight, &dw, want_w}, std::tuple{bias, &db, want_b}}) {
          if (!want) continue;
          Array d = Array::from_shape(t.shape());
          for (std::size_t i = 0; i < N; ++i) {  // the blocks' sums, block by block
            double total = 0.0;
            for (std::size_t blk = 0; blk < blocks; ++blk) total += (*sums)[blk * N + i];
            d.data()[i] = static_cast<float>(total);
          }
          t.accumulate_grad(std::move(d), "layer_norm");
        }
      });
  return y;
}

}  // namespace tapegrad::ops
