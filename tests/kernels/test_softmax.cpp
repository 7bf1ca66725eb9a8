// tests/kernels/test_softmax.cpp: softmax and log_softmax on every kernel set this CPU can
// run. The fast sets give the same bits; the reference kernels call std::exp where the fast ones
// call exp_f32, so they differ by a few float roundings (the bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <tapegrad/core/cpu.hpp>
#include <tapegrad/core.hpp>

#include "../helpers.hpp"
#include "../capability_guard.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::input;

namespace {
// y and dx of softmax or log_softmax along dim on the set, for fixed inputs.
std::vector<Array> run(CpuCapability set, const Shape& shape, std::int64_t dim, bool log) {
  set_cpu_capability(set);
  Tensor x(input(shape, 1).data() * 4.0f, true);
  Tensor y = log ? ops::log_softmax(x, dim) : ops::softmax(x, dim);
  y.backward(input(shape, 2, false).data());
  return {y.data(), x.grad()};
}

// |a - b| within `ulps` float roundings of max(|a|, |b|, floor).
bool within_roundings(const Array& a, const Array& b, double ulps, double floor) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.flat(i), y = b.flat(i);
    const double scale = std::max({std::abs(x), std::abs(y), floor});
    if (!(std::abs(x - y) <= ulps * 0x1p-24 * scale)) return false;
  }
  return true;
}

struct Case {
  Shape shape;
  std::int64_t dim;
};
const std::vector<Case> kCases = {{{3, 37}, -1}, {{64, 100}, 1}, {{4, 6, 5}, 1}, {{5, 3}, 0}};
}  // namespace

TEST_SUITE("ops.softmax_kernels") {
  TEST_CASE("every fast kernel set gives the same bits for softmax and log_softmax") {
    CapabilityGuard guard;
    for (const Case& c : kCases)
      for (bool log : {false, true}) {
        const auto expected = run(CpuCapability::baseline, c.shape, c.dim, log);
        for (CpuCapability set : available_cpu_capabilities()) {
          if (set == CpuCapability::reference) continue;
          CAPTURE(to_string(set));
          CAPTURE(c.shape);
          const auto got = run(set, c.shape, c.dim, log);
          for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
        }
      }
  }

  TEST_CASE("the reference softmax kernels agree with the fast ones within a few float roundings") {
    CapabilityGuard guard;
    for (const Case& c : kCases)
      for (bool log : {false, true}) {
        CAPTURE(c.shape);
        CAPTURE(log);
        const auto fast = run(CpuCapability::baseline, c.shape, c.dim, log);
        const auto ref = run(CpuCapability::reference, c.shape, c.dim, log);
        // y: relative to the value (softmax's tiny probabilities included), log_softmax's to
        // max(|y|, 1); dx to max(|dx|, 1). Measured over 20 seeds: at most 4.2 and 8 roundings.
        CHECK(within_roundings(ref[0], fast[0], 8, log ? 1.0 : 0.0));
        CHECK(within_roundings(ref[1], fast[1], 16, 1.0));
      }
  }
}
