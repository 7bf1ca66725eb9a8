// tests/core/test_random.cpp: the portable generator (docs/semantics.md#randomness).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

TEST_SUITE("random") {
  TEST_CASE("draws follow the raw engine: u24, u53 and Box-Muller on 1 - u53 and u53") {
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

  TEST_CASE(
      "the same seed gives the same numbers, and state() then set_state() continue a stream "
      "exactly") {
    Generator a(7), b(7);
    CHECK(tapegrad::testing::bit_equal(randn({5, 3}, &a), randn({5, 3}, &b)));
    a.normal();  // leave a pending Box-Muller value in the state
    Generator c(0);
    c.set_state(a.state());
    for (int i = 0; i < 10; ++i) CHECK(a.normal() == c.normal());
    CHECK(a.next_u64() == c.next_u64());
    CHECK_THROWS_WITH_AS(c.set_state("garbage"),
                         doctest::Contains("expected text from Generator::state()"), ValueError);
  }

  TEST_CASE("set_state reads numbers whole, as state() writes them, and changes nothing else") {
    Generator a(7);
    a.normal();  // a pending Box-Muller value: the spare is written
    const std::string good = a.state();
    const std::size_t s1 = good.find(' '), s2 = good.find(' ', s1 + 1), s3 = good.find(' ', s2 + 1);
    const std::string seed = good.substr(0, s1), spare = good.substr(s2 + 1, s3 - s2 - 1),
                      engine = good.substr(s3 + 1);
    Generator c(0);
    c.set_state(good);
    CHECK(c.state() == good);
    const std::string before = Generator(3).state();
    for (const std::string& bad :
         {"-" + seed + " 1 " + spare + " " + engine,  // a sign wraps around
          "+" + seed + " 1 " + spare + " " + engine,
          seed + "x 1 " + spare + " " + engine,     // junk after a number
          seed + " 2 " + spare + " " + engine,      // not a flag
          seed + " 1 " + spare + "junk " + engine,  // junk after the spare normal
          seed + " 1 nan " + engine, seed + " 1 inf " + engine,
          seed + "  1 " + spare + " " + engine,            // two spaces
          good + " 5",                                     // a word too many
          good + "x", good.substr(0, good.rfind(' '))}) {  // junk at the end, a word too few
      Generator g(3);
      CHECK_THROWS_WITH_AS(g.set_state(bad),
                           doctest::Contains("expected text from Generator::state()"), ValueError);
      CHECK(g.state() == before);
    }
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

  TEST_CASE("Mt19937_64 is std::mt19937_64 bit for bit: outputs and state text") {
    for (std::uint64_t seed : {0ULL, 1ULL, 42ULL, 5489ULL, ~0ULL}) {
      Mt19937_64 ours(seed);
      std::mt19937_64 reference(seed);
      bool same = true;
      for (int i = 0; i < 100000 && same; ++i) same = ours() == reference();
      CHECK_MESSAGE(same, "seed ", seed);
      std::ostringstream text;
      text << reference;
      CHECK(ours.text() == text.str());
    }
  }

  TEST_CASE("a text state of std::mt19937_64 continues the same stream in Mt19937_64") {
    std::mt19937_64 reference(9);
    for (int i = 0; i < 1000; ++i) reference();
    std::ostringstream text;
    text << reference;
    Mt19937_64 ours(0);
    CHECK(ours.set_text(text.str()));
    for (int i = 0; i < 1000; ++i) CHECK(ours() == reference());
    CHECK_FALSE(ours.set_text("1 2 3"));
    CHECK_FALSE(ours.set_text(text.str().substr(0, text.str().rfind(' ')) +
                              " 313"));  // index past the state
  }

  TEST_CASE("stream_id changes when the stream is replaced, not when it is drawn from") {
    Generator g(11);
    const std::uint64_t id = g.stream_id();
    g.next_u64();
    g.normal();
    CHECK(g.stream_id() == id);
    g.manual_seed(11);  // even with the same seed
    CHECK(g.stream_id() != id);
    const std::uint64_t seeded = g.stream_id();
    g.set_state(Generator(3).state());
    CHECK(g.stream_id() != seeded);
    Generator copy = g;
    CHECK(copy.stream_id() != g.stream_id());  // a copy is another stream object
    CHECK(copy.next_u64() == g.next_u64());    // with the same numbers
    const std::uint64_t before = g.stream_id();
    g = copy;
    CHECK(g.stream_id() != before);
    CHECK(g.stream_id() != copy.stream_id());
  }
}  // TEST_SUITE
