// tests/kernels/test_layer_norm.cpp: layer_norm on every kernel set this CPU can run. The fast
// sets (baseline, avx2, avx512: one source compiled three times) give the same bits; the reference
// kernels differ from them only in the order of their double sums, so by at most a few float
// roundings (the bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

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
// y, dx, dweight, dbias of layer_norm on the set, for fixed inputs whose rows have a mean far from
// zero (the centred sums then cancel, where the order of additions shows).
std::vector<Array> run(CpuCapability set, const Shape& shape, LayerNormVariant variant,
                       bool affine) {
  set_cpu_capability(set);
  const std::size_t N = shape.back();
  Tensor x(input(shape, 1).data() * 3.0f + 5.0f, true);
  Tensor w = affine ? input({N}, 2) : Tensor(), b = affine ? input({N}, 3) : Tensor();
  Tensor y = ops::layer_norm(x, {static_cast<std::int64_t>(N)}, w, b,
                             LayerNormFuncOptions().variant(variant));
  y.backward(input(shape, 4, false).data());
  std::vector<Array> out{y.data(), x.grad()};
  if (affine) out.insert(out.end(), {w.grad(), b.grad()});
  return out;
}

// |a - b| within `ulps` float roundings of the larger magnitude (or of 1 for values near 0, where
// y = (x - mean) / d cancels and the absolute error is what the rounding of mean leaves).
bool within_roundings(const Array& a, const Array& b, double ulps) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.flat(i), y = b.flat(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double scale = std::max({std::abs(x), std::abs(y), 1.0});
    if (!(std::abs(x - y) <= ulps * 0x1p-24 * scale)) return false;
  }
  return true;
}

const std::vector<Shape> kShapes = {{3, 7}, {130, 64}, {2, 4, 33}, {4, 1}};
}  // namespace

TEST_SUITE("ops.layer_norm_kernels") {
  TEST_CASE("every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (const Shape& shape : kShapes)
      for (LayerNormVariant variant : {LayerNormVariant::pytorch, LayerNormVariant::annotated})
        for (bool affine : {false, true}) {
          const auto expected = run(CpuCapability::baseline, shape, variant, affine);
          for (CpuCapability set : available_cpu_capabilities()) {
            if (set == CpuCapability::reference) continue;
            CAPTURE(to_string(set));
            CAPTURE(shape);
            const auto got = run(set, shape, variant, affine);
            for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
          }
        }
  }

  TEST_CASE("the reference layer_norm kernels agree with the fast ones within 8 float roundings") {
    CapabilityGuard guard;
    for (const Shape& shape : kShapes)
      for (LayerNormVariant variant : {LayerNormVariant::pytorch, LayerNormVariant::annotated})
        for (bool affine : {false, true}) {
          CAPTURE(shape);
          const auto fast = run(CpuCapability::baseline, shape, variant, affine);
          const auto ref = run(CpuCapability::reference, shape, variant, affine);
          for (std::size_t i = 0; i < fast.size(); ++i) {
            CHECK(within_roundings(ref[i], fast[i], 8));
            CHECK(fast[i].shape() == ref[i].shape());
          }
        }
  }

  TEST_CASE("forward and backward run the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    // recorded on the reference set, differentiated after switching: the backward is the
    // reference's too, so the gradient is the reference's whatever the set at backward time
    set_cpu_capability(CpuCapability::reference);
    Tensor x(input({130, 64}, 1).data() * 3.0f + 5.0f, true);
    Tensor y = ops::layer_norm(x, {64});
    set_cpu_capability(available_cpu_capabilities().back());
    y.backward(input({130, 64}, 4, false).data());
    const Array dx_switched = x.grad();
    x.zero_grad();
    set_cpu_capability(CpuCapability::reference);
    ops::layer_norm(x, {64}).backward(input({130, 64}, 4, false).data());
    CHECK(bit_equal(x.grad(), dx_switched));
  }
}
