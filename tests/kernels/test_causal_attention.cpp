// tests/kernels/test_causal_attention.cpp: causal_self_attention on every kernel set this CPU
// can run. The fast sets (baseline, avx2, avx512: one source compiled three times) give the same
// bits; the reference kernels (plain loops, std::exp, plain-order sums) differ from them by a few
// float roundings (the bound: docs/semantics.md#kernel-sets).
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
  Shape qkv;  // (B, T, 3C), or (B, T, (heads + 2 kv_heads) hs)
  std::int64_t heads;
  double dropout;
  bool bias = false;  // an additive bias on the scores, (heads, T, T)
  std::int64_t kv_heads = 0;  // grouped-query attention's key/value heads; 0: heads
};
// Heads narrower and wider than the fast kernels' vectors (8 or 16 floats) and tiles (two
// vectors); heads of 28 and 52 columns, which take tiles of two vectors, then one, then single
// floats (28 on the eight-float sets, 52 with AVX-512); T not a multiple of the 6-row tiles nor of
// the 8 x 8 blocks the keys are transposed by; one position; dropout on the weights; a bias on the
// scores, alone and with dropout; grouped-query attention (3 query heads per key/value head of 64
// columns, SmolLM2's; multi-query with dropout and a bias; pairs of heads of 28 columns).
const std::vector<Case> kCases = {{{2, 37, 15 * 64}, 9, 0.0, false, 3},
                                  {{2, 13, 6 * 8}, 4, 0.3, true, 1},
                                  {{1, 50, 8 * 28}, 4, 0.0, false, 2},{{2, 19, 36}, 3, 0.0},       {{1, 40, 192}, 2, 0.0},
                                  {{2, 13, 48}, 1, 0.3},       {{1, 1, 6}, 1, 0.0},
                                  {{1, 27, 168}, 2, 0.0},      {{1, 50, 312}, 2, 0.0},
                                  {{2, 19, 36}, 3, 0.0, true}, {{1, 50, 312}, 2, 0.0, true},
                                  {{2, 13, 48}, 1, 0.3, true}};

// y, the weights and dqkv on the set, for fixed inputs.
std::vector<Array> run(CpuCapability set, const Case& c) {
  set_cpu_capability(set);
  Tensor qkv(input(c.qkv, 1).data() * 2.0f, true);
  Array weights;
  auto options =
      CausalAttentionOptions().dropout(c.dropout).dropout_stream(ops::DropoutStream{7, 3});
  const std::size_t T = c.qkv[1], H = std::size_t(c.heads);
  if (c.bias) options.bias(input({H, T, T}, 9, false).data() * 3.0f);
  if (c.kv_heads > 0) options.n_kv_head(c.kv_heads);
  Tensor y = ops::causal_self_attention(qkv, c.heads, options, &weights);
  y.backward(input(y.shape(), 4, false).data());
  return {y.data(), weights, qkv.grad()};
}

}  // namespace

TEST_SUITE("ops.causal_attention_kernels") {
  TEST_CASE("every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (const Case& c : kCases) {
      const auto expected = run(CpuCapability::baseline, c);
      for (CpuCapability set : available_cpu_capabilities()) {
        if (set == CpuCapability::reference) continue;
        CAPTURE(to_string(set));
        CAPTURE(c.qkv);
        const auto got = run(set, c);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE("the reference kernels agree with the fast ones within 32 float roundings per head") {
    CapabilityGuard guard;
    for (const Case& c : kCases) {
      CAPTURE(c.qkv);
      const auto fast = run(CpuCapability::baseline, c);
      const auto ref = run(CpuCapability::reference, c);
      for (std::size_t i = 0; i < fast.size(); ++i) {
        CAPTURE(i);
        CHECK(fast[i].shape() == ref[i].shape());
        const double r = roundings_apart(ref[i], fast[i]);
        MESSAGE("output ", i, ": ", r, " roundings");
        // a key/value head's gradient sums its query heads' parts: their differences add up
        const double group = c.kv_heads > 0 ? double(c.heads / c.kv_heads) : 1.0;
        CHECK(r <= (i == 2 ? 32.0 * group : 32.0));
      }
    }
  }

  TEST_CASE("the backward runs the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    const Case& c = kCases[4];
    set_cpu_capability(CpuCapability::reference);
    Tensor qkv(input(c.qkv, 1).data() * 2.0f, true);
    Tensor y = ops::causal_self_attention(qkv, c.heads);
    set_cpu_capability(available_cpu_capabilities().back());
    y.backward(input(y.shape(), 4, false).data());
    const Array switched = qkv.grad();
    qkv.zero_grad();
    set_cpu_capability(CpuCapability::reference);
    ops::causal_self_attention(qkv, c.heads).backward(input(y.shape(), 4, false).data());
    CHECK(bit_equal(qkv.grad(), switched));
    // and the reference's gradient is not the fast one's bit for bit (else this test shows nothing)
    qkv.zero_grad();
    set_cpu_capability(available_cpu_capabilities().back());
    ops::causal_self_attention(qkv, c.heads).backward(input(y.shape(), 4, false).data());
    CHECK_FALSE(bit_equal(qkv.grad(), switched));
  }
}
