// src/ops/softmax.cpp
//
// softmax and log_softmax along one dimension. Both subtract the row's max before exp, which
// changes nothing mathematically (the factor e^-max cancels) but keeps exp from overflowing for
// large logits; the denominator is summed in double, in order. Backward reads only the saved
// output y (softmax(x) = exp(log_softmax(x))), so x is not kept. A "row" is the n values along the
// dimension; along the last dimension rows are contiguous, which is the fast path.
#include "tapegrad/ops/softmax.hpp"

#include <algorithm>
#include <cmath>

#include "../exp_f32.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"

namespace tapegrad::ops {

namespace {
// Calls f(offset, stride, n) for every row along dimension d of an array of shape s: the row's
// elements sit at offset + k * stride, k < n. Rows along the last dimension are contiguous
// (stride 1) and get their own loop, which compiles to unit-stride code.
template <class F>
void for_each_row(const Shape& s, std::size_t d, F&& f) {
  std::size_t outer = 1, inner = 1;
  const std::size_t n = s.empty() ? 1 : s[d];  // a scalar is one row of one element
  for (std::size_t k = 0; k < d && k < s.size(); ++k) outer *= s[k];
  for (std::size_t k = d + 1; k < s.size(); ++k) inner *= s[k];
  if (n == 0) return;
  if (inner == 1) {
    for (std::size_t o = 0; o < outer; ++o) f(o * n, std::size_t{1}, n);
    return;
  }
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) f(o * n * inner + i, inner, n);
}

// y = exp(x - max) / sum(exp(x - max))        or, when log:  y = (x - max) - log(sum(exp(x - max)))
Array softmax_forward(const Array& x, std::size_t d, bool log) {
  Array y = Array::from_shape(x.shape());
  const float* px = x.data();
  float* py = y.data();
  for_each_row(x.shape(), d, [&](std::size_t at, std::size_t stride, std::size_t n) {
    const float* xr = px + at;
    float* yr = py + at;
    float m = xr[0];
    for (std::size_t k = 1; k < n; ++k) m = std::max(m, xr[k * stride]);
    for (std::size_t k = 0; k < n; ++k)
      yr[k * stride] = detail::exp_f32(xr[k * stride] - m);  // SIMD when stride is 1
    double s = 0.0;
    for (std::size_t k = 0; k < n; ++k) s += yr[k * stride];
    if (log) {
      const auto log_s = static_cast<float>(std::log(s));
      for (std::size_t k = 0; k < n; ++k) yr[k * stride] = (xr[k * stride] - m) - log_s;
    } else {
      const auto sum = static_cast<float>(s);
      for (std::size_t k = 0; k < n; ++k) yr[k * stride] /= sum;
    }
  });
  return y;
}

// y = softmax(x)        dx = y * (dy - sum(dy * y))
Array softmax_backward(const Array& y, const Array& dy, std::size_t d) {
  Array dx = Array::from_shape(y.shape());
  const float *py = y.data(), *pd = dy.data();
  float* px = dx.data();
  for_each_row(y.shape(), d, [&](std::size_t at, std::size_t stride, std::size_t n) {
    double dot = 0.0;
    for (std::size_t k = 0; k < n; ++k)
      dot += double(pd[at + k * stride]) * double(py[at + k * stride]);
    const auto c = static_cast<float>(dot);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t j = at + k * stride;
      px[j] = py[j] * (pd[j] - c);
    }
  });
  return dx;
}

// y = log_softmax(x)        dx = dy - exp(y) * sum(dy)        (exp(y) = softmax(x))
Array log_softmax_backward(const Array& y, const Array& dy, std::size_t d) {
  Array dx = Array::from_shape(y.shape());
  const float *py = y.data(), *pd = dy.data();
  float* px = dx.data();
  for_each_row(y.shape(), d, [&](std::size_t at, std::size_t stride, std::size_t n) {
    double total = 0.0;
    for (std::size_t k = 0; k < n; ++k) total += pd[at + k * stride];
    const auto c = static_cast<float>(total);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t j = at + k * stride;
      px[j] = pd[j] - detail::exp_f32(py[j]) * c;
    }
  });
  return dx;
}
}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  const std::size_t d = normalize_dim(autograd::where("softmax"), dim, x.dim());
  Tensor y(softmax_forward(x.data(), d, /*log=*/false));
  autograd::record("softmax", y, {x}, {y}, [x, out = y.detach(), d](Array dy) {
    x.accumulate_grad(softmax_backward(out.data(), dy, d), "softmax");
  });
  return y;
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  const std::size_t d = normalize_dim(autograd::where("log_softmax"), dim, x.dim());
  Tensor y(softmax_forward(x.data(), d, /*log=*/true));
  autograd::record("log_softmax", y, {x}, {y}, [x, out = y.detach(), d](Array dy) {
    x.accumulate_grad(log_softmax_backward(out.data(), dy, d), "log_softmax");
  });
  return y;
}

}  // namespace tapegrad::ops
