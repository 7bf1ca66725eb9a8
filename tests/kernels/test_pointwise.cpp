// tests/kernels/test_pointwise.cpp: the pointwise ops (silu, relu_squared, clamp) on every kernel set
// this CPU can run. The fast sets
// (baseline, avx2, avx512: one source compiled three times) give the same bits; the reference
// kernels use the C library's exp where the fast ones use exp_f32, so they differ by a rounding or
// two (the bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <tapegrad/core.hpp>
#include <tapegrad/ops/clamp.hpp>

#include "../helpers.hpp"
#include "kernel_set_compare.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::roundings_apart;

namespace {
using Op = Tensor (*)(const Tensor&);
Tensor clamp(const Tensor& x) { return ops::clamp(x, -0.5f, 0.8f); }
const std::pair<const char*, Op> kOps[] = {
    {"silu", ops::silu}, {"relu_squared", ops::relu_squared}, {"clamp", clamp}};

// y and dx of op on the set, over [-30, 30] and the special values; dx for dy = 1 (the
// derivative) or dy = 1 + x / 16.
std::vector<Array> run(Op op, CpuCapability set, bool dy_ones = false) {
  set_cpu_capability(set);
  Array x0 = testing::input({40, 500}, 5, false).data() * 6.0f;
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f, -0.0f, inf, -inf, std::nanf(""), 1e30f, -1e30f, 90.0f, -90.0f};
  for (std::size_t i = 0; i < std::size(special); ++i) x0.flat(i) = special[i];
  Tensor x(x0, true);
  Tensor y = op(x);
  y.backward(dy_ones ? Array(xt::ones<float>(x0.shape())) : Array(1.0f + x0 / 16.0f));
  return {y.data(), x.grad()};
}
}  // namespace

TEST_SUITE("ops.pointwise_kernels") {
  TEST_CASE(
      "the pointwise ops: every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (const auto& [name, op] : kOps) {
      CAPTURE(name);
      const auto want = run(op, CpuCapability::baseline);
      for (CpuCapability set : available_cpu_capabilities()) {
        if (set == CpuCapability::reference) continue;
        CAPTURE(to_string(set));
        const auto got = run(op, set);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], want[i]));
      }
    }
  }

  TEST_CASE(
      "the pointwise ops: the reference kernels agree with the fast ones within 8 float "
      "roundings") {
    CapabilityGuard guard;
    for (const auto& [name, op] : kOps) {
      const auto fast = run(op, CpuCapability::baseline, true),
                 ref = run(op, CpuCapability::reference, true);
      for (std::size_t i = 0; i < fast.size(); ++i) {
        INFO(name, " output ", i, ": ", roundings_apart(ref[i], fast[i]), " roundings");
        CHECK(roundings_apart(ref[i], fast[i]) <= 8.0);
      }
    }
  }

  TEST_CASE(
      "relu_squared and clamp: the reference and the fast kernels give the same bits (no exp to "
      "differ)") {
    CapabilityGuard guard;
    for (const Op op : {Op(ops::relu_squared), Op(clamp)}) {
      const auto fast = run(op, available_cpu_capabilities().back()),
                 ref = run(op, CpuCapability::reference);
      for (std::size_t i = 0; i < fast.size(); ++i) CHECK(bit_equal(ref[i], fast[i]));
    }
  }

  TEST_CASE("the pointwise ops: backward runs the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    for (const auto& [name, op] : kOps) {
      CAPTURE(name);
      set_cpu_capability(CpuCapability::reference);
      Tensor x(testing::input({40, 500}, 5, false).data() * 6.0f, true);
      Tensor y = op(x);
      set_cpu_capability(available_cpu_capabilities().back());
      y.backward(Array(1.0f + x.data() / 16.0f));
      const Array switched = x.grad();
      x.zero_grad();
      set_cpu_capability(CpuCapability::reference);
      op(x).backward(Array(1.0f + x.data() / 16.0f));
      CHECK(bit_equal(x.grad(), switched));
    }
  }
}
