// tests/test_random.cpp: the portable generator of SPEC 2.1.4.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "helpers.hpp"

using namespace tapegrad;

TEST_SUITE("random") {

TEST_CASE("draws follow the raw engine as SPEC 2.1.4 defines them") {
  Generator g(42);
  std::mt19937_64 raw(42);
  CHECK(g.uniform_float() == static_cast<float>(raw() >> 40) * 0x1.0p-24f);
  CHECK(g.uniform_double() == static_cast<double>(raw() >> 11) * 0x1.0p-53);
  const double u1 = 1.0 - static_cast<double>(raw() >> 11) * 0x1.0p-53;
  const double u2 = static_cast<double>(raw() >> 11) * 0x1.0p-53;
  const double r = std::sqrt(-2.0 * std::log(u1));
  CHECK(g.normal() == r * std::cos(2.0 * M_PI * u2));
  CHECK(g.normal() == r * std::sin(2.0 * M_PI * u2));
}

TEST_CASE("the same seed gives the same numbers, and state() then set_state() continue a stream exactly") {
  Generator a(7), b(7);
  CHECK(tapegrad::testing::bit_equal(randn({5, 3}, &a), randn({5, 3}, &b)));
  a.normal();                        // leave a pending Box-Muller value in the state
  Generator c(0);
  c.set_state(a.state());
  for (int i = 0; i < 10; ++i) CHECK(a.normal() == c.normal());
  CHECK(a.next_u64() == c.next_u64());
  CHECK_THROWS_WITH_AS(c.set_state("garbage"), doctest::Contains("expected text from Generator::state()"), ValueError);
}

TEST_CASE("normal draws have mean 0 and variance 1, uniform draws stay in range") {
  Generator g(3);
  const Array z = randn({100000}, &g);
  double m = 0, v = 0;
  for (float x : z) m += x;
  m /= double(z.size());
  for (float x : z) v += (x - m) * (x - m);
  v /= double(z.size());
  CHECK(std::abs(m) < 0.02);
  CHECK(std::abs(v - 1.0) < 0.02);
  const Array u = uniform({1000}, -0.25, 0.25, &g);
  for (float x : u) CHECK((x >= -0.25f && x <= 0.25f));
}

TEST_CASE("randint covers low to high-1 and rejects an empty range") {
  Generator g(1);
  int seen[3] = {0, 0, 0};
  for (int i = 0; i < 300; ++i) ++seen[g.randint(0, 3)];
  CHECK((seen[0] > 50 && seen[1] > 50 && seen[2] > 50));
  CHECK_THROWS_WITH_AS(g.randint(3, 3), doctest::Contains("expected low < high"), ValueError);
}

}  // TEST_SUITE
