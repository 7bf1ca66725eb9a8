// src/ops/softmax.cpp
//
// softmax and log_softmax along one dimension: the checks and the recording; the maths is in the
// reference kernels below (read them first), and src/kernels/softmax.cpp has their fast versions,
// which kernels::pick chooses for the CPU (docs/kernels.md). Both subtract the row's max before
// exp, which changes nothing mathematically (the factor e^-max cancels) but keeps exp from
// overflowing for large logits; the denominator is summed in double, in order. Backward reads only
// the saved output y (softmax(x) = exp(log_softmax(x))), so x is not kept. x is seen as
// (outer, n, inner) with n the size of the dimension; along the last dimension inner is 1 (the
// fast path).
#include "tapegrad/ops/softmax.hpp"

#include <algorithm>
#include <cmath>

#include "softmax_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// Plain loops, one row at a time, no threads. The fast versions compute e^x with tapegrad's
// vectorisable exp_f32 where these call std::exp; both are within one rounding of e^x, so the
// results can differ by a rounding or two (docs/semantics.md#kernel-sets).

// m = max_k x_k (subtracting it changes nothing but keeps e^x from overflowing)
// softmax:      y_k = e^(x_k - m) / sum_j e^(x_j - m)
// log_softmax:  y_k = (x_k - m) - log(sum_j e^(x_j - m))
void softmax_forward(const float* x, float* y, std::size_t outer, std::size_t n, std::size_t inner,
                     bool log) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner && n > 0; ++i) {
      const float* xr = x + o * n * inner + i;  // the row: xr[k * inner], k < n
      float* yr = y + o * n * inner + i;
      float m = xr[0];
      for (std::size_t k = 1; k < n; ++k) m = std::max(m, xr[k * inner]);
      double sum = 0.0;
      for (std::size_t k = 0; k < n; ++k) sum += std::exp(xr[k * inner] - m);
      for (std::size_t k = 0; k < n; ++k)
        yr[k * inner] = log ? (xr[k * inner] - m) - float(std::log(sum))
                            : std::exp(xr[k * inner] - m) / float(sum);
    }
}

// y = softmax(x):      dx_k = y_k * (dy_k - sum_j dy_j * y_j)
void softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer, std::size_t n,
                      std::size_t inner) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) {
      const std::size_t at = o * n * inner + i;
      double dot = 0.0;
      for (std::size_t k = 0; k < n; ++k) dot += double(dy[at + k * inner]) * y[at + k * inner];
      for (std::size_t k = 0; k < n; ++k)
        dx[at + k * inner] = y[at + k * inner] * (dy[at + k * inner] - float(dot));
    }
}

// y = log_softmax(x):  dx_k = dy_k - e^(y_k) * sum_j dy_j        (e^y = softmax(x))
void log_softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer,
                          std::size_t n, std::size_t inner) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) {
      const std::size_t at = o * n * inner + i;
      double sum = 0.0;
      for (std::size_t k = 0; k < n; ++k) sum += dy[at + k * inner];
      for (std::size_t k = 0; k < n; ++k)
        dx[at + k * inner] = dy[at + k * inner] - std::exp(y[at + k * inner]) * float(sum);
    }
}

// ---- the op -------------------------------------------------------------------------------------

namespace {
struct Rows {
  std::size_t outer = 1, n = 1, inner = 1;  // a scalar is one row of one element
};

Rows rows_along(const Shape& s, std::size_t d) {
  Rows r;
  if (s.empty()) return r;
  r.n = s[d];
  for (std::size_t k = 0; k < d; ++k) r.outer *= s[k];
  for (std::size_t k = d + 1; k < s.size(); ++k) r.inner *= s[k];
  return r;
}

Tensor softmax_op(const Tensor& x, std::int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  const std::size_t d = normalize_dim(autograd::where(name), dim, x.dim());
  const Rows r = rows_along(x.shape(), d);
  // The set in use's kernels, picked once: backward runs the same set's backward.
  const auto forward = kernels::pick<softmax_forward>();
  const auto backward_kernel =
      log ? kernels::pick<log_softmax_backward>() : kernels::pick<softmax_backward>();
  Array out = Array::from_shape(x.shape());
  forward(x.data().data(), out.data(), r.outer, r.n, r.inner, log);
  Tensor y(std::move(out));
  autograd::record(
      name, y, {x}, {y}, [x = x.edge(), out = y.detach(), r, backward_kernel, name](Array dy) {
        Array dx = Array::from_shape(x.shape());
        backward_kernel(out.data().data(), dy.data(), dx.data(), r.outer, r.n, r.inner);
        x.accumulate_grad(std::move(dx), name);
      });
  return y;
}
}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) { return softmax_op(x, dim, /*log=*/false); }

Tensor log_softmax(const Tensor& x, std::int64_t dim) { return softmax_op(x, dim, /*log=*/true); }

}  // namespace tapegrad::ops
