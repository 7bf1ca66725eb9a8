// tests/kernels/test_row_sparse.cpp: coalescing a row-sparse gradient on every kernel set this
// CPU can run. Each group's rows are added in the order they were produced, from 0, on every set:
// the reference (plain loops) included, the same bits.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <tapegrad/core/cpu.hpp>
#include <tapegrad/core.hpp>

#include "../capability_guard.hpp"
#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;

namespace {
// n gradient rows of dim floats for ids drawn from [0, num): repeats in every order.
RowSparseGrad sparse(std::size_t n, std::size_t num, std::size_t dim, std::uint64_t seed) {
  Generator gen(seed);
  RowSparseGrad g;
  g.dense_shape = {num, dim};
  g.indices = xt::xarray<std::int64_t>::from_shape({n});
  const Array u = rand({n}, &gen);
  for (std::size_t p = 0; p < n; ++p)
    g.indices.data()[p] = std::int64_t(u.data()[p] * float(num)) % std::int64_t(num);
  g.values = randn({n, dim}, &gen);
  return g;
}
}  // namespace

TEST_SUITE("ops.row_sparse_kernels") {
  TEST_CASE("every kernel set, the reference included, coalesces to the same bits") {
    CapabilityGuard guard;
    struct Case {
      std::size_t n, num, dim;
    };
    // none; few rows; many repeats of few ids; rows of 1 and 263 floats
    for (const Case c : {Case{0, 3, 4}, Case{5, 3, 4}, Case{2000, 7, 33}, Case{300, 50, 263},
                         Case{90000, 60000, 1}}) {
      CAPTURE(c.n);
      CAPTURE(c.dim);
      const RowSparseGrad g = sparse(c.n, c.num, c.dim, c.n + c.dim);
      set_cpu_capability(CpuCapability::baseline);
      const RowSparseGrad expected = g.coalesce();
      for (CpuCapability set : available_cpu_capabilities()) {
        CAPTURE(to_string(set));
        set_cpu_capability(set);
        const RowSparseGrad got = g.coalesce();
        CHECK(got.indices == expected.indices);
        CHECK(bit_equal(got.values, expected.values));
        CHECK(got.dense_shape == expected.dense_shape);
      }
    }
  }

  TEST_CASE("a dense shape that is not 2-D coalesces its ids to rows of no floats") {
    CapabilityGuard guard;
    RowSparseGrad g;
    g.dense_shape = {4};
    g.indices = {3, 1, 3};
    g.values = xt::xarray<float>::from_shape({3, 0});
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      const RowSparseGrad c = g.coalesce();
      CHECK(c.indices == xt::xarray<std::int64_t>{1, 3});
      CHECK(c.values.shape() == std::vector<std::size_t>{2, 0});
    }
  }

  TEST_CASE("the fast kernels give the same bits on 1 and 2 threads") {
    CapabilityGuard guard;
    const int threads = get_num_threads();
    // rows of 16 floats: 4096 groups to a thread's share, about 17000 groups here
    const RowSparseGrad g = sparse(40000, 20000, 16, 7);
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      set_num_threads(1);
      const RowSparseGrad one = g.coalesce();
      set_num_threads(2);
      const RowSparseGrad two = g.coalesce();
      set_num_threads(threads);
      CHECK(one.indices == two.indices);
      CHECK(bit_equal(one.values, two.values));
    }
  }

  TEST_CASE("rows are added in the order they were produced, from 0, on every set") {
    CapabilityGuard guard;
    RowSparseGrad g;
    g.dense_shape = {4, 2};
    g.indices = {2, 0, 2, 2};
    // id 2's rows in order: 3e16, -3e16, 1 gives 1; any order that does not add the 1 last gives 0
    // (swapping the first two cannot change a sum).
    // id 0's row is -0, which coalesces to +0, as adding it to a zeroed dense row would.
    g.values = Array{{3e16f, 1.0f}, {-0.0f, 2.0f}, {-3e16f, 1.0f}, {1.0f, 1.0f}};
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      const RowSparseGrad c = g.coalesce();
      CHECK(c.indices == xt::xarray<std::int64_t>{0, 2});
      CHECK(bit_equal(c.values, Array{{0.0f, 2.0f}, {1.0f, 3.0f}}));
    }
  }
}
