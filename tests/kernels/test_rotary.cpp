// tests/kernels/test_rotary.cpp: rotary_embedding and rotary_embedding_qkv on every kernel set
// this CPU can run. The fast sets (one source compiled three times) and the reference kernels make
// the same float operations, so all of them give the same bits (docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <optional>
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
// y and dx of the rotary op on the set: x (B, H, T, head_dim * heads) turned from position 3, and
// a packed qkv (B, T, 3C) from position 0; with halves, pairs (p, p + 4), and the qkv grouped
// (n_kv_head 1: (B, T, (n_head + 2) * 8)).
std::vector<Array> run(CpuCapability set, const Shape& shape, bool qkv,
                       ops::RotaryPairs pairs = ops::RotaryPairs::interleaved) {
  set_cpu_capability(set);
  const ops::RotaryTable table = ops::rotary_table(8, 600);
  const Tensor cos(table.cos, false), sin(table.sin, false);
  const bool halves = pairs == ops::RotaryPairs::halves;
  Tensor x = input(shape, 1);
  Tensor y = qkv ? ops::rotary_embedding_qkv(x, cos, sin, 0, pairs,
                                             halves ? std::optional<std::int64_t>(1) : std::nullopt)
                 : ops::rotary_embedding(x, cos, sin, /*offset=*/3, pairs);
  y.backward(input(shape, 2, false).data());
  return {y.data(), x.grad()};
}
}  // namespace

TEST_SUITE("ops.rotary_kernels") {
  TEST_CASE("rotary: every kernel set, the reference included, gives the same bits") {
    CapabilityGuard guard;
    for (const auto& [shape, qkv] :
         {std::pair{Shape{2, 3, 5, 16}, false}, std::pair{Shape{1, 7, 8}, false},
          std::pair{Shape{2, 5, 3 * 16}, true}, std::pair{Shape{4, 512, 3 * 64}, true}}) {
      const auto expected = run(CpuCapability::reference, shape, qkv);
      for (CpuCapability set : available_cpu_capabilities()) {
        CAPTURE(to_string(set));
        CAPTURE(shape);
        const auto got = run(set, shape, qkv);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE("rotary with halves: every kernel set, the reference included, gives the same bits") {
    CapabilityGuard guard;
    for (const auto& [shape, qkv] :
         {std::pair{Shape{2, 3, 5, 16}, false}, std::pair{Shape{1, 7, 8}, false},
          std::pair{Shape{2, 5, 5 * 8}, true}, std::pair{Shape{4, 512, 9 * 8}, true}}) {
      const auto expected = run(CpuCapability::reference, shape, qkv, ops::RotaryPairs::halves);
      for (CpuCapability set : available_cpu_capabilities()) {
        CAPTURE(to_string(set));
        CAPTURE(shape);
        const auto got = run(set, shape, qkv, ops::RotaryPairs::halves);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE("rotary: the fast kernels give the same bits on 1 and 2 threads") {
    CapabilityGuard guard;
    const int threads = get_num_threads();
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_num_threads(1);
      const auto one = run(set, {4, 512, 3 * 64}, true);
      set_num_threads(2);
      const auto two = run(set, {4, 512, 3 * 64}, true);
      set_num_threads(threads);
      for (std::size_t i = 0; i < one.size(); ++i) CHECK(bit_equal(one[i], two[i]));
    }
  }
}
