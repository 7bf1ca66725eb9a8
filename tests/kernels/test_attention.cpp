// tests/kernels/test_attention.cpp: scaled_dot_product_attention on every kernel set this CPU
// can run. The fast sets (baseline, avx2, avx512: one source compiled three times, the products on
// OpenBLAS) give the same bits; the reference kernels (plain loops, std::exp) differ from them by
// a few float roundings (the bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <tapegrad/core/cpu.hpp>
#include <tapegrad/core.hpp>

#include "../helpers.hpp"
#include "../capability_guard.hpp"
#include "kernel_set_compare.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::input;
using tapegrad::testing::roundings_apart;

namespace {
struct Case {
  std::size_t B, Tq, Tk, heads, dk, dv;
  int mask;  // 0 none, 1 causal (Tq == Tk), 2 padding of the last key
  double dropout;
};
const std::vector<Case> kCases = {{2, 5, 7, 2, 4, 3, 0, 0.0},
                                  {1, 9, 9, 3, 8, 8, 1, 0.0},
                                  {2, 6, 11, 1, 16, 5, 2, 0.25},
                                  {1, 1, 1, 1, 1, 1, 0, 0.0}};

// out, the weights and dq, dk, dv on the set, for fixed inputs.
std::vector<Array> run(CpuCapability set, const Case& c) {
  set_cpu_capability(set);
  Tensor q(input({c.B, c.Tq, c.heads * c.dk}, 1).data() * 2.0f, true);
  Tensor k = input({c.B, c.Tk, c.heads * c.dk}, 2), v = input({c.B, c.Tk, c.heads * c.dv}, 3);
  std::optional<Mask> mask;
  if (c.mask == 1) mask = ops::subsequent_mask(std::int64_t(c.Tq));
  if (c.mask == 2) {
    Mask m = Mask::from_shape({c.B, 1, c.Tk});
    for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = i % c.Tk != c.Tk - 1;
    mask = m;
  }
  const auto options = AttentionOptions()
                           .heads(std::int64_t(c.heads))
                           .dropout(c.dropout)
                           .dropout_stream(ops::DropoutStream{11, 2});
  Array weights;
  Tensor y = ops::scaled_dot_product_attention(q, k, v, mask, options, &weights);
  y.backward(input(y.shape(), 4, false).data());
  return {y.data(), weights, q.grad(), k.grad(), v.grad()};
}

}  // namespace

TEST_SUITE("ops.attention_kernels") {
  TEST_CASE("every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (const Case& c : kCases) {
      const auto expected = run(CpuCapability::baseline, c);
      for (CpuCapability set : available_cpu_capabilities()) {
        if (set == CpuCapability::reference) continue;
        CAPTURE(to_string(set));
        CAPTURE(c.Tq);
        const auto got = run(set, c);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE("the reference kernels agree with the fast ones within 16 float roundings") {
    CapabilityGuard guard;
    for (const Case& c : kCases) {
      CAPTURE(c.Tq);
      CAPTURE(c.dk);
      const auto fast = run(CpuCapability::baseline, c);
      const auto ref = run(CpuCapability::reference, c);
      for (std::size_t i = 0; i < fast.size(); ++i) {
        CAPTURE(i);
        CHECK(fast[i].shape() == ref[i].shape());
        const double r = roundings_apart(ref[i], fast[i]);
        MESSAGE("output ", i, ": ", r, " roundings");
        CHECK(r <= 16.0);
      }
    }
  }

  TEST_CASE("the backward runs the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    const Case& c = kCases[1];
    const auto ref = run(CpuCapability::reference, c), fast = run(CpuCapability::baseline, c);
    REQUIRE_FALSE(bit_equal(ref[2], fast[2]));  // else this test could not tell them apart
    set_cpu_capability(CpuCapability::reference);
    Tensor q(input({c.B, c.Tq, c.heads * c.dk}, 1).data() * 2.0f, true);
    Tensor k = input({c.B, c.Tk, c.heads * c.dk}, 2), v = input({c.B, c.Tk, c.heads * c.dv}, 3);
    Tensor y = ops::scaled_dot_product_attention(q, k, v, ops::subsequent_mask(std::int64_t(c.Tq)),
                                                 AttentionOptions().heads(std::int64_t(c.heads)));
    set_cpu_capability(CpuCapability::baseline);
    y.backward(input(y.shape(), 4, false).data());
    CHECK(bit_equal(q.grad(), ref[2]));
  }
}
