// tests/core/test_exp_f32.cpp: the vectorisable exponential of src/kernels/exp_f32.hpp against the correctly
// rounded e^x (std::exp in double, rounded once to float), and its special values.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../src/kernels/exp_f32.hpp"

using tapegrad::detail::exp_f32;

namespace {
// Distance in units in the last place between two finite floats of the same sign.
std::int64_t ulp_distance(float a, float b) {
  return std::abs(std::int64_t(std::bit_cast<std::int32_t>(a)) -
                  std::int64_t(std::bit_cast<std::int32_t>(b)));
}
float reference(float x) { return static_cast<float>(std::exp(double(x))); }
}  // namespace

TEST_CASE("exp_f32 is within 1 ulp of the correctly rounded e^x over the whole finite range") {
  // Every 61st float between -104 and 89 (about 36 million, both signs), plus the neighbourhood of
  // 0 and of both ends, where the range reduction and the 2^n scaling are most delicate.
  const std::uint32_t step = 61;
  std::int64_t worst = 0;
  std::size_t checked = 0, over_one = 0;
  float worst_x = 0.0f;
  auto check_bits = [&](std::uint32_t bits) {
    const float x = std::bit_cast<float>(bits);
    if (!(x >= -104.0f && x <= 89.0f)) return;
    const float want = reference(x), got = exp_f32(x);
    const std::int64_t d = (std::isinf(want) || std::isinf(got)) ? (want == got ? 0 : 1 << 30)
                                                                 : ulp_distance(want, got);
    ++checked;
    over_one += d > 1;
    if (d > worst) worst = d, worst_x = x;
  };
  for (std::uint64_t b = 0; b <= 0x42B20000u; b += step) check_bits(std::uint32_t(b));  // [0, 89]
  for (std::uint64_t b = 0x80000000u; b <= 0xC2D00000u; b += step)
    check_bits(std::uint32_t(b));  // [-104, -0]
  for (std::uint32_t k = 0; k < 20000; ++k) {
    check_bits(k);                // the smallest positive
    check_bits(0x80000000u + k);  // and negative floats
    check_bits(std::bit_cast<std::uint32_t>(88.72283935546875f) - 10000 + k);  // overflow edge
    check_bits(std::bit_cast<std::uint32_t>(-87.33654785156250f) - 10000 +
               k);  // subnormal results begin
    check_bits(std::bit_cast<std::uint32_t>(-103.97207641601562f) - 10000 + k);  // results reach 0
  }
  INFO("worst ", worst, " ulp at x = ", worst_x, " (", checked, " inputs, ", over_one,
       " over 1 ulp)");
  CHECK(checked > 30000000);
  CHECK(worst <= 1);
  CHECK(over_one == 0);
}

TEST_CASE("exp_f32 gives std::exp's special values") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(exp_f32(0.0f) == 1.0f);
  CHECK(exp_f32(-0.0f) == 1.0f);
  CHECK(exp_f32(inf) == inf);
  CHECK(exp_f32(-inf) == 0.0f);
  CHECK(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  CHECK(exp_f32(89.0f) == inf);  // e^89 > FLT_MAX
  CHECK(exp_f32(1000.0f) == inf);
  CHECK(exp_f32(-104.0f) == 0.0f);  // below half the smallest subnormal
  CHECK(exp_f32(-1000.0f) == 0.0f);
  CHECK(exp_f32(-100.0f) == reference(-100.0f));  // a subnormal result, rounded correctly
  CHECK(exp_f32(-100.0f) > 0.0f);
  CHECK(exp_f32(std::numeric_limits<float>::max()) == inf);
  CHECK(exp_f32(std::numeric_limits<float>::lowest()) == 0.0f);
}

TEST_CASE("exp_f32 gives the same values in a vectorised loop as one at a time") {
  // The loops of the kernels compile to SIMD code; the scalar calls here may not. Same bits.
  std::vector<float> x(4099), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -100.0f + 188.0f * float(i) / float(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = exp_f32(x[i]);
  for (std::size_t i = 0; i < x.size(); i += 7) {
    volatile float xi = x[i];  // keeps this one call scalar
    CHECK(std::bit_cast<std::uint32_t>(exp_f32(xi)) == std::bit_cast<std::uint32_t>(y[i]));
  }
}
