// src/ops/layer_norm.cpp
//
// Layer normalisation as one fused op: the checks, the forward kernel, and a recorded backward
// kernel, instead of the ten or so recorded ops (mean, sub, pow, mean, sqrt, add, div, mul, add)
// the formula would take. The maths is in the kernels: layer_norm_reference.cpp (read it first)
// and layer_norm_fast.cpp, picked for the CPU by kernels::layer_norm_kernels() (docs/kernels.md).
// x is viewed as (rows, N) with N = prod(normalized_shape); rows are contiguous. Saved for
// backward: x, weight, and per row the mean, rstd = 1/d and the coefficient k of the formula
// (three floats per row).
#include "tapegrad/ops/layer_norm.hpp"

#include <sstream>
#include <vector>

#include "layer_norm_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

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
  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::LayerNormKernels* kernel = &kernels::layer_norm_kernels();
  std::vector<float> stats(3 * rows);  // per row: mean, rstd, k
  float *mean = stats.data(), *rstd = mean + rows, *k = rstd + rows;
  Array out = Array::from_shape(sx);
  const float* w = weight.defined() ? weight.data().data() : nullptr;
  const float* b = bias.defined() ? bias.data().data() : nullptr;
  kernel->forward(x.data().data(), w, b, out.data(), mean, rstd, k, rows, N, eps,
                  options.variant() == LayerNormVariant::annotated);
  Tensor y(std::move(out));

  std::vector<Tensor> inputs{x}, saved{x};
  if (weight.defined()) {
    inputs.push_back(weight);
    saved.push_back(weight);
  }
  if (bias.defined()) inputs.push_back(bias);
  auto backward = [x, weight, bias, stats = std::move(stats), kernel, rows, N](Array dy) {
    const bool want_x = x.requires_grad(), want_w = weight.defined() && weight.requires_grad(),
               want_b = bias.defined() && bias.requires_grad();
    Array dx = want_x ? Array::from_shape(x.shape()) : Array();
    Array dw = want_w ? Array::from_shape(weight.shape()) : Array();
    Array db = want_b ? Array::from_shape(bias.shape()) : Array();
    const float* st = stats.data();  // mean, rstd, k
    kernel->backward(dy.data(), x.data().data(), weight.defined() ? weight.data().data() : nullptr,
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
