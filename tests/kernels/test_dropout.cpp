// tests/kernels/test_dropout.cpp: dropout on every kernel set this CPU can run. The mask is
// integer arithmetic on the Philox stream and the apply one multiplication per element: every
// set, the reference (one Philox block per element, plain loops) included, gives the same bits.
#include <doctest/doctest.h>

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
// Sizes below one mask chunk, not a multiple of 4, and above a thread's share (2^15 elements).
const std::vector<Shape> kShapes = {{3, 7}, {5, 1001}, {3, 40000}};
const ops::DropoutStream kStream{0x123456789abcdefULL, 0x100000002ULL};  // both words used

// dropout out of place, in place and fused with a row table: values and gradients, and the mask.
std::vector<Array> run(CpuCapability set, const Shape& shape, double p) {
  set_cpu_capability(set);
  std::vector<Array> out;
  Tensor x = input(shape, 1);
  Tensor y = ops::dropout(x, p, true, kStream);
  y.backward(input(shape, 2, false).data());
  out.insert(out.end(), {y.data(), x.grad()});
  Tensor z = input(shape, 3, false);
  out.push_back(ops::dropout(z, p, true, kStream, /*inplace=*/true).data());
  Tensor x3 = input({1, shape[0], shape[1]}, 4);
  Tensor y3 =
      ops::add_rows_dropout(x3, input({shape[0] + 1, shape[1]}, 5, false).data(), p, true, kStream);
  y3.backward(input(y3.shape(), 6, false).data());
  out.insert(out.end(), {y3.data(), x3.grad()});
  // nothing dropped (evaluation): the table's rows added to three slices
  Tensor x4 = input({3, shape[0], shape[1]}, 7, false);
  out.push_back(
      ops::add_rows_dropout(x4, input({shape[0], shape[1]}, 8, false).data(), p, false, kStream)
          .data());
  const xt::xarray<std::uint8_t> keep = ops::dropout_mask(shape, p, kStream);
  out.push_back(xt::cast<float>(keep));
  return out;
}
}  // namespace

TEST_SUITE("ops.dropout_kernels") {
  TEST_CASE("every kernel set, the reference included, gives the same mask and the same bits") {
    CapabilityGuard guard;
    for (const Shape& shape : kShapes)
      for (double p : {0.1, 0.5, 1.0}) {
        CAPTURE(shape);
        CAPTURE(p);
        const auto expected = run(CpuCapability::baseline, shape, p);
        for (CpuCapability set : available_cpu_capabilities()) {
          CAPTURE(to_string(set));
          const auto got = run(set, shape, p);
          for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
        }
      }
  }

  TEST_CASE("the mask keeps about 1 - p of the elements on every set") {
    CapabilityGuard guard;
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      const xt::xarray<std::uint8_t> keep = ops::dropout_mask({100000}, 0.25, kStream);
      std::size_t kept = 0;
      for (std::uint8_t k : keep) kept += k;
      CHECK(kept > 74000);
      CHECK(kept < 76000);
    }
  }
}
