// tests/kernels/kernel_set_compare.hpp: what the *_kernels tests of the elementwise family share: the
// set in use put back when a test ends, and "within k float roundings".
#pragma once

#include <algorithm>
#include <cmath>

#include <tapegrad/core/cpu.hpp>

#include "../capability_guard.hpp"
#include <tapegrad/core/tensor.hpp>

namespace tapegrad::testing {

/// The largest |a - b| over the elements, in float roundings (2^-24) of max(|a|, |b|, 1): values
/// near 0 are measured against 1, where a formula that cancels leaves an absolute error. Infinite
/// when one is NaN and the other not, or the shapes differ; two NaNs, or two equal values, are 0.
inline double roundings_apart(const Array& a, const Array& b) {
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.flat(i), y = b.flat(i);
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;
    const double scale = std::max({std::abs(x), std::abs(y), 1.0});
    const double apart = std::abs(x - y) / (0x1p-24 * scale);
    worst = std::isnan(apart) ? INFINITY : std::max(worst, apart);
  }
  return worst;
}

}  // namespace tapegrad::testing
