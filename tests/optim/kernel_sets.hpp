// tests/optim/kernel_sets.hpp: what the optimizers' kernel-set tests (tests/kernels/optim) share:
// putting the kernel set back, and how far two results are apart in float roundings.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include <tapegrad/core/cpu.hpp>

#include "../capability_guard.hpp"
#include <tapegrad/tapegrad.hpp>

namespace tapegrad::testing {

// The largest |a - b| over the elements, in float roundings (2^-24) of the largest magnitude in
// either array (a name of its own: tests/kernels/kernel_set_compare.hpp's roundings_apart measures
// each element against its own magnitude, and two inline functions of one name would be one
// function to the linker): a bound for results whose error comes from a few roundings of the
// values they are made of (an optimizer's state mixes the gradients of every step). NaN against
// NaN is 0, NaN against a number is infinite.
inline double roundings_apart_of_largest(const Array& a, const Array& b) {
  double scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    scale = std::max({scale, std::abs(double(a.flat(i))), std::abs(double(b.flat(i)))});
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.flat(i), y = b.flat(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double d = std::abs(x - y);
    if (!(d <= scale * 1e30)) return INFINITY;  // NaN or infinite on one side only
    worst = std::max(worst, d == 0.0 ? 0.0 : d / (scale * 0x1p-24));
  }
  return worst;
}

}  // namespace tapegrad::testing
