// src/ops/rms_norm.cpp
//
// RMSNorm as one fused op: the checks, the forward kernel, and a recorded backward kernel. The
// maths is in the kernels: rms_norm_reference.cpp (read it first) and rms_norm_fast.cpp, picked
// for the CPU by kernels::rms_norm_kernels() (docs/kernels.md). x is viewed as (rows, N) with
// N = prod(normalized_shape), rows contiguous. Saved for backward: x, weight, and per row
// rstd = 1 / sqrt(mean(x^2) + eps).
#include "tapegrad/ops/rms_norm.hpp"

#include <limits>
#include <sstream>
#include <vector>

#include "rms_norm_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/layer_norm.hpp"

namespace tapegrad::ops {

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
  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::RMSNormKernels* kernel = &kernels::rms_norm_kernels();
  std::vector<float> rstd(rows);
  Array out = Array::from_shape(sx);
  const float* w = weight.defined() ? weight.data().data() : nullptr;
  kernel->forward(x.data().data(), w, out.data(), rstd.data(), rows, N, eps);
  Tensor y(std::move(out));

  std::vector<Tensor> inputs{x}, saved{x};
  if (weight.defined()) {
    inputs.push_back(weight);
    saved.push_back(weight);
  }
  auto backward = [x, weight, rstd = std::move(rstd), kernel, rows, N](Array dy) {
    const bool want_x = x.requires_grad(), want_w = weight.defined() && weight.requires_grad();
    Array dx = want_x ? Array::from_shape(x.shape()) : Array();
    Array dw = want_w ? Array::from_shape(weight.shape()) : Array();
    kernel->backward(dy.data(), x.data().data(), weight.defined() ? weight.data().data() : nullptr,
                     rstd.data(), want_x ? dx.data() : nullptr, want_w ? dw.data() : nullptr, rows,
                     N);
    if (want_x) x.accumulate_grad(std::move(dx), "rms_norm");
    if (want_w) weight.accumulate_grad(std::move(dw), "rms_norm");
  };
  autograd::record("rms_norm", y, inputs, saved, std::move(backward));
  return y;
}

}  // namespace tapegrad::ops
