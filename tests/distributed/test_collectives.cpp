// tests/distributed/test_collectives.cpp: the process group and the collectives, on every rank.
// Each rank contributes values that depend on its rank, so the expected results are known exactly.
#include <doctest/doctest.h>

#include <tapegrad/distributed.hpp>
#include <tapegrad/tapegrad.hpp>

#include "helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;

TEST_SUITE("distributed.collectives") {
  TEST_CASE("every rank knows the job's size and its own number") {
    const int n = distributed::world_size(), r = distributed::rank();
    CHECK(distributed::is_initialized());
    CHECK(n >= 1);
    CHECK((0 <= r && r < n));
    const std::vector<std::uint64_t> ranks = distributed::all_gather(static_cast<std::uint64_t>(r));
    REQUIRE(ranks.size() == static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k)
      CHECK(ranks[static_cast<std::size_t>(k)] == static_cast<std::uint64_t>(k));
    distributed::barrier();
  }

  TEST_CASE(
      "all_reduce sums, averages, and takes the max and min, elementwise, the same bits "
      "everywhere") {
    const int n = distributed::world_size();
    const float r = static_cast<float>(distributed::rank());
    const float sum_of_ranks = static_cast<float>(n * (n - 1) / 2);
    Array a = {{r, 1.0f}, {2.0f * r, -r}};
    Array sum = a, average = a, max = a, min = a;
    distributed::all_reduce(sum);
    distributed::all_reduce(average, distributed::ReduceOp::average);
    distributed::all_reduce(max, distributed::ReduceOp::max);
    distributed::all_reduce(min, distributed::ReduceOp::min);
    CHECK(bit_equal(sum, Array{{sum_of_ranks, float(n)}, {2.0f * sum_of_ranks, -sum_of_ranks}}));
    CHECK(bit_equal(average, Array{{sum_of_ranks / float(n), 1.0f},
                                   {2.0f * sum_of_ranks / float(n), -sum_of_ranks / float(n)}}));
    CHECK(bit_equal(
        max, Array{{float(n - 1), 1.0f}, {2.0f * float(n - 1), -0.0f}}));  // -r is -0 on rank 0
    CHECK(bit_equal(min, Array{{0.0f, 1.0f}, {0.0f, -float(n - 1)}}));
    CHECK(distributed::all_reduce(1.5) == doctest::Approx(1.5 * n));
    CHECK(distributed::all_reduce(static_cast<double>(r), distributed::ReduceOp::max) == n - 1);
    CHECK(distributed::all_reduce(2.0, distributed::ReduceOp::average) == 2.0);
    // An empty array is a valid (and empty) reduction.
    Array empty = Array::from_shape({0, 3});
    distributed::all_reduce(empty);
    CHECK(empty.shape() == Shape{0, 3});
  }

  TEST_CASE("broadcast gives every rank the root's values") {
    const int n = distributed::world_size();
    const float r = static_cast<float>(distributed::rank());
    for (int root = 0; root < n; ++root) {
      Array a = {r, r + 10.0f, r + 20.0f};
      distributed::broadcast(a, root);
      CHECK(bit_equal(a, Array{float(root), float(root) + 10.0f, float(root) + 20.0f}));
      IndexArray ids = {{static_cast<std::int64_t>(r), 7}};
      distributed::broadcast(ids, root);
      CHECK(ids == IndexArray{{root, 7}});
    }
    Array a = {1.0f};
    CHECK_THROWS_WITH_AS(distributed::broadcast(a, n),
                         doctest::Contains("expected a root rank in [0, "), ValueError);
  }

  TEST_CASE(
      "arrays whose shapes differ between ranks are a ShapeError on every rank, naming each "
      "shape") {
    const int n = distributed::world_size(), r = distributed::rank();
    if (n < 2) return;  // needs two ranks to differ
    Array a = xt::zeros<float>({std::size_t(2), std::size_t(2 + r)});
    CHECK_THROWS_WITH_AS(
        distributed::all_reduce(a),
        doctest::Contains("distributed::all_reduce: expected the same shape on every rank, got "
                          "rank 0 (2, 2), rank 1 (2, 3)"),
        ShapeError);
    Array v = xt::zeros<float>({std::size_t(3 - r)});
    CHECK_THROWS_WITH_AS(distributed::broadcast(v, 0),
                         doctest::Contains("rank 0 (3,), rank 1 (2,)"), ShapeError);
    distributed::barrier();  // and the ranks are still in step
  }

  TEST_CASE("set_timeout takes only a positive number of seconds") {
    const double before = distributed::timeout();
    CHECK_THROWS_WITH_AS(distributed::set_timeout(0),
                         doctest::Contains("expected a positive number of seconds"), ValueError);
    distributed::set_timeout(before);
    CHECK(distributed::timeout() == before);
  }
}  // TEST_SUITE
