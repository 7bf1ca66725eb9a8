// tests/core/test_erf_f32.cpp: the vectorisable error function of src/kernels/erf_f32.hpp against std::erf
// in double (rounded once to float), its symmetry and its special values.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../src/kernels/erf_f32.hpp"

using tapegrad::detail::erf_f32;

namespace {
// Distance in ulps from the exact value (double) to a float, in units of the float's ulp.
double ulps(float got, double exact) {
  const float rounded = static_cast<float>(exact);
  const double ulp = std::nextafter(std::fabs(rounded), INFINITY) - std::fabs(rounded);
  return std::fabs(double(got) - exact) / ulp;
}
}  // namespace

TEST_CASE("erf_f32 is within 1.25 ulp of erf from 0 to 4.5, and odd") {
  // Every 97th float from 0 to 4.5 (about 11 million), both branch regions and the switch between
  // them at 0.921875; beyond 3.95 the value is 1. The whole range was checked once (1.238 ulp).
  double worst = 0.0;
  float worst_x = 0.0f;
  std::size_t checked = 0;
  std::vector<float> xs, ys;
  for (std::uint32_t b = 0; b <= 0x40900000u; b += 97) xs.push_back(std::bit_cast<float>(b));
  for (std::uint32_t k = 0; k < 2000; ++k)
    xs.push_back(std::bit_cast<float>(std::bit_cast<std::uint32_t>(0.921875f) - 1000 + k));
  ys.resize(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i)
    ys[i] = erf_f32(xs[i]);  // a loop the compiler vectorises
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double e = ulps(ys[i], std::erf(double(xs[i])));
    ++checked;
    if (e > worst) worst = e, worst_x = xs[i];
  }
  INFO("worst ", worst, " ulp at x = ", worst_x, " (", checked, " inputs)");
  CHECK(checked > 10000000);
  CHECK(worst <= 1.25);
  for (float x : {0.1f, 0.5f, 0.9f, 0.921875f, 1.0f, 2.0f, 3.0f, 3.95f, 5.0f})
    CHECK(std::bit_cast<std::uint32_t>(erf_f32(-x)) == std::bit_cast<std::uint32_t>(-erf_f32(x)));
}

TEST_CASE("erf_f32 gives std::erf's special values") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(erf_f32(0.0f) == 0.0f);
  CHECK(std::signbit(erf_f32(-0.0f)));
  CHECK(erf_f32(inf) == 1.0f);
  CHECK(erf_f32(-inf) == -1.0f);
  CHECK(erf_f32(10.0f) == 1.0f);
  CHECK(std::isnan(erf_f32(std::numeric_limits<float>::quiet_NaN())));
  CHECK(ulps(erf_f32(1e-30f), std::erf(double(1e-30f))) <= 1.0);  // tiny: 2x/sqrt(pi), not 0
  CHECK(erf_f32(std::numeric_limits<float>::denorm_min()) >= 0.0f);
}
