// src/ops/softmax_reference.cpp
//
// softmax's and log_softmax's reference kernels: plain loops, one row at a time, no threads, no
// intrinsics (docs/kernels.md). x is seen as (outer, n, inner); a row is the n values along the
// middle axis. The fast kernels (softmax_fast.cpp) compute e^x with tapegrad's vectorisable
// exp_f32 where these call std::exp; both are within one rounding of e^x, so the results can
// differ by a rounding or two (docs/semantics.md#kernel-sets).
#include <algorithm>
#include <cmath>

#include "softmax_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// m = max_k x_k (subtracting it changes nothing but keeps e^x from overflowing)
// softmax:      y_k = e^(x_k - m) / sum_j e^(x_j - m)
// log_softmax:  y_k = (x_k - m) - log(sum_j e^(x_j - m))
void forward(const float* x, float* y, std::size_t outer, std::size_t n, std::size_t inner,
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

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const SoftmaxKernels softmax{forward, softmax_backward, log_softmax_backward};

}  // namespace tapegrad::kernels::reference
