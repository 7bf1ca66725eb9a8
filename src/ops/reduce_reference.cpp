// src/ops/reduce_reference.cpp
//
// The reductions' reference kernels: plain loops (docs/kernels.md: read these first). Sums are in
// double, each in the order of its elements in memory, so they are reproducible and accurate for
// the long sums of a loss. The fast kernels (reduce_fast.cpp) add in the same order, so both give
// the same bits.
#include <cmath>

#include "reduce_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

// sum = x_0 + x_1 + ... + x_(n-1)
double sum(const float* x, std::size_t n) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) total += x[i];
  return total;
}

// acc[o] += x[i], o = the offset of i's index with its summed coordinates dropped (stride 0)
void sum_dims(const float* x, const std::size_t* shape, const std::size_t* out_strides,
              std::size_t rank, double* acc) {
  std::size_t total = 1;
  for (std::size_t d = 0; d < rank; ++d) total *= shape[d];
  for (std::size_t i = 0; i < total; ++i) {
    std::size_t rest = i, o = 0;  // i's index, last dimension first
    for (std::size_t d = rank; d-- > 0;) {
      o += (rest % shape[d]) * out_strides[d];
      rest /= shape[d];
    }
    acc[o] += x[i];
  }
}

// out[o, j] = sum over k of x[o, k, j]
void sum_axis(const float* x, std::size_t outer, std::size_t n, std::size_t inner, float* out) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < inner; ++j) {
      float total = 0.0f;
      for (std::size_t k = 0; k < n; ++k) total += x[(o * n + k) * inner + j];
      out[o * inner + j] = total;
    }
}

// values[o, j] = max over k of x[o, k, j], indices[o, j] = the first such k; NaN beats everything
void max_along(const float* x, std::size_t outer, std::size_t n, std::size_t inner, float* values,
               std::int64_t* indices) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < inner; ++j) {
      std::size_t best = 0;
      for (std::size_t k = 1; k < n; ++k) {
        const float v = x[(o * n + k) * inner + j], b = x[(o * n + best) * inner + j];
        if (!std::isnan(b) && (v > b || std::isnan(v))) best = k;
      }
      values[o * inner + j] = x[(o * n + best) * inner + j];
      indices[o * inner + j] = static_cast<std::int64_t>(best);
    }
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const ReduceKernels reduce{sum, sum_dims, sum_axis, max_along};

}  // namespace tapegrad::kernels::reference
