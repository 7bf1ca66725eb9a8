// tests/kernels/test_rms_norm.cpp: rms_norm on every kernel set this CPU can run. The fast sets
// (one source compiled three times) and the reference kernels make the same float operations and
// add every sum in the same order, so all of them give the same bits (docs/semantics.md#kernel-sets).
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
// y, dx and dweight of rms_norm on the set, with and without a weight.
std::vector<Array> run(CpuCapability set, const Shape& shape, bool affine) {
  set_cpu_capability(set);
  const std::size_t N = shape.back();
  Tensor x(input(shape, 1).data() * 2.0f + 0.5f, true);
  Tensor w = affine ? input({N}, 2) : Tensor();
  Tensor y = ops::rms_norm(x, {static_cast<std::int64_t>(N)}, w, 1e-5);
  y.backward(input(shape, 4, false).data());
  std::vector<Array> out{y.data(), x.grad()};
  if (affine) out.push_back(w.grad());
  return out;
}

// {2000, 96}: rows and columns enough for two threads' shares, so that a 2-thread run splits them.
const std::vector<Shape> kShapes = {{3, 7}, {130, 64}, {2, 4, 33}, {4, 1}, {2000, 96}};
}  // namespace

TEST_SUITE("ops.rms_norm_kernels") {
  TEST_CASE("rms_norm: every kernel set, the reference included, gives the same bits") {
    CapabilityGuard guard;
    for (const Shape& shape : kShapes)
      for (bool affine : {false, true}) {
        const auto expected = run(CpuCapability::reference, shape, affine);
        for (CpuCapability set : available_cpu_capabilities()) {
          CAPTURE(to_string(set));
          CAPTURE(shape);
          CAPTURE(affine);
          const auto got = run(set, shape, affine);
          REQUIRE(got.size() == expected.size());
          for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
        }
      }
  }

  TEST_CASE("rms_norm: the fast kernels give the same bits on 1 and 2 threads") {
    CapabilityGuard guard;
    const int threads = get_num_threads();
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_num_threads(1);
      const auto one = run(set, {2000, 96}, true);
      set_num_threads(2);
      const auto two = run(set, {2000, 96}, true);
      set_num_threads(threads);
      for (std::size_t i = 0; i < one.size(); ++i) CHECK(bit_equal(one[i], two[i]));
    }
  }
}
