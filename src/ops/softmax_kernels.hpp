// src/ops/softmax_kernels.hpp (private)
//
// softmax's and log_softmax's kernels: the references are defined in softmax.cpp, their fast
// versions in src/kernels/softmax.cpp (src/core/dispatch.hpp). x is seen as (outer, n, inner) and
// the op runs along the middle axis: row (o, i) is x[(o * n + k) * inner + i] for k < n. Along the
// last dimension inner is 1 and rows are contiguous.
#pragma once

#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::ops {

/// y = softmax(x), or log_softmax(x) when log, along each row.
void softmax_forward(const float* x, float* y, std::size_t outer, std::size_t n, std::size_t inner,
                     bool log);
/// dx (written) from y = softmax(x) and dy.
void softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer, std::size_t n,
                      std::size_t inner);
/// dx (written) from y = log_softmax(x) and dy.
void log_softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer,
                          std::size_t n, std::size_t inner);

}  // namespace tapegrad::ops
