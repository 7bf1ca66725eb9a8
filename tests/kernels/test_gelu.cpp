// tests/kernels/test_gelu.cpp: gelu on every kernel set this CPU can run. The fast sets
// (baseline, avx2, avx512: one source compiled three times) give the same bits; the reference
// kernels use the C library's erf, exp and tanh, so they differ by a few float roundings (the
// bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"
#include "kernel_set_compare.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::roundings_apart;

namespace {
// x: normal values spread over [-12, 12] (both erf branches, the tails) and the special values.
Array gelu_input() {
  Array x = testing::input({64, 300}, 11, false).data() * 4.0f;
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f,   -0.0f,     inf,   -inf,   std::nanf(""), 1e20f,
                           -1e20f, 0.921875f, 3.95f, -3.95f, 1e-30f,        -12.0f};
  for (std::size_t i = 0; i < std::size(special); ++i) x.flat(i) = special[i];
  return x;
}

// y, dx and y without a tape, on the set; dx for dy = 1 (the derivative) or dy = 1.5 + x / 8.
std::vector<Array> run(CpuCapability set, const std::string& form, bool dy_ones = false) {
  set_cpu_capability(set);
  Tensor x(gelu_input(), true);
  Tensor y = ops::gelu(x, form);
  y.backward(dy_ones ? Array(xt::ones<float>(x.shape())) : Array(1.5f + x.data() / 8.0f));
  autograd::NoGradGuard no_grad;
  return {y.data(), x.grad(), ops::gelu(x, form).data()};
}
}  // namespace

TEST_SUITE("ops.gelu_kernels") {
  TEST_CASE("every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (const std::string form : {"none", "tanh"}) {
      const auto expected = run(CpuCapability::baseline, form);
      CHECK(bit_equal(expected[0], expected[2]));  // with and without the derivative
      for (CpuCapability set : available_cpu_capabilities()) {
        if (set == CpuCapability::reference) continue;
        CAPTURE(to_string(set));
        CAPTURE(form);
        const auto got = run(set, form);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE("the reference kernels agree with the fast ones within 4 roundings, 40 for tanh's dx") {
    // The tanh form's derivative has 1 - tanh^2 u, which the reference computes as written: where
    // tanh u rounds near 1 (x from 3 to 6) it cancels, and 0.5 x u' (up to 9) scales what is left.
    CapabilityGuard guard;
    for (const std::string form : {"none", "tanh"}) {
      CAPTURE(form);
      const auto fast = run(CpuCapability::baseline, form, true);
      const auto ref = run(CpuCapability::reference, form, true);
      for (std::size_t i = 0; i < fast.size(); ++i) {
        CAPTURE(i);  // y, dx (the derivative), y without a tape
        INFO("gelu ", form, " output ", i, ": ", roundings_apart(ref[i], fast[i]));
        CHECK(roundings_apart(ref[i], fast[i]) <= (i == 1 && form == "tanh" ? 40.0 : 4.0));
      }
    }
  }

  TEST_CASE("backward runs the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    set_cpu_capability(CpuCapability::reference);
    Tensor x(gelu_input(), true);
    Tensor y = ops::gelu(x);
    set_cpu_capability(available_cpu_capabilities().back());
    y.backward(Array(1.5f + x.data() / 8.0f));
    CHECK(bit_equal(x.grad(), run(CpuCapability::reference, "none")[1]));
  }
}
