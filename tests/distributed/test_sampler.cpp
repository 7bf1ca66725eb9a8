// tests/distributed/test_sampler.cpp: DistributedSampler against PyTorch's (goldens from
// scripts/golden/distributed_sampler.py), its shuffling rules, and local_batch_size's errors.
// The sampler needs MPI only for its defaults: these cases pass num_replicas and rank themselves.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include <tapegrad/distributed.hpp>
#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;
using distributed::DistributedSampler;
using distributed::DistributedSamplerOptions;
using Indices = std::vector<std::int64_t>;

namespace {
std::vector<Indices> shards(std::int64_t size, int replicas, bool drop_last, bool shuffle = false,
                            std::int64_t epoch = 0) {
  std::vector<Indices> all;
  for (int r = 0; r < replicas; ++r) {
    DistributedSampler s(size, DistributedSamplerOptions()
                                   .num_replicas(replicas)
                                   .rank(r)
                                   .shuffle(shuffle)
                                   .drop_last(drop_last)
                                   .seed(7));
    s.set_epoch(epoch);
    CHECK(s.indices().size() == static_cast<std::size_t>(s.num_samples()));
    all.push_back(s.indices());
  }
  return all;
}
}  // namespace

TEST_SUITE("distributed.sampler") {
  TEST_CASE("without shuffling, the shards are PyTorch's, padded or cut as PyTorch's") {
    using V = std::vector<Indices>;
    CHECK(shards(10, 3, false) == V{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}});
    CHECK(shards(10, 3, true) == V{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}});
    CHECK(shards(10, 2, false) == V{{0, 2, 4, 6, 8}, {1, 3, 5, 7, 9}});
    CHECK(shards(10, 2, true) == V{{0, 2, 4, 6, 8}, {1, 3, 5, 7, 9}});
    CHECK(shards(2, 3, false) == V{{0}, {1}, {0}});
    CHECK(shards(2, 3, true) == V{{}, {}, {}});
    CHECK(shards(7, 4, false) == V{{0, 4}, {1, 5}, {2, 6}, {3, 0}});
    CHECK(shards(7, 4, true) == V{{0}, {1}, {2}, {3}});
    CHECK(shards(0, 2, false) == V{{}, {}});
    CHECK(shards(0, 2, true) == V{{}, {}});
  }

  TEST_CASE(
      "shuffled, the ranks split one order that every rank draws alike, a new one each epoch") {
    for (const bool drop_last : {false, true}) {
      const std::vector<Indices> e0 = shards(103, 4, drop_last, true, 0),
                                 e1 = shards(103, 4, drop_last, true, 1);
      CHECK(e0 == shards(103, 4, drop_last, true, 0));  // the same seed and epoch, the same order
      CHECK(e0 != e1);
      for (const auto& epoch : {e0, e1}) {
        std::multiset<std::int64_t> seen;
        for (const Indices& shard : epoch) seen.insert(shard.begin(), shard.end());
        CHECK(seen.size() == (drop_last ? 100u : 104u));
        // Padded: all 103 examples, one of them twice. Cut: 100 distinct examples.
        CHECK(std::set<std::int64_t>(seen.begin(), seen.end()).size() == (drop_last ? 100u : 103u));
      }
    }
    // Dealing: rank r takes positions r, r + N, ... of the global order.
    DistributedSampler whole(10, DistributedSamplerOptions().num_replicas(1).rank(0).seed(3));
    DistributedSampler second(10, DistributedSamplerOptions().num_replicas(2).rank(1).seed(3));
    const Indices order = whole.indices();
    CHECK(second.indices() == Indices{order[1], order[3], order[5], order[7], order[9]});
    CHECK(second.global_order() == order);
  }

  TEST_CASE("N ranks with batch B take the global batches one process takes with batch B*N") {
    const std::int64_t B = 3;
    DistributedSampler one(24, DistributedSamplerOptions().num_replicas(1).rank(0).seed(5));
    const Indices global = one.indices();
    std::vector<Indices> parts;
    for (int r = 0; r < 2; ++r)
      parts.push_back(
          DistributedSampler(24, DistributedSamplerOptions().num_replicas(2).rank(r).seed(5))
              .indices());
    for (std::size_t k = 0; k < 4; ++k) {  // batch k
      std::multiset<std::int64_t> together,
          expected(global.begin() + std::ptrdiff_t(k * 2 * B),
                   global.begin() + std::ptrdiff_t((k + 1) * 2 * B));
      for (const Indices& p : parts)
        together.insert(p.begin() + std::ptrdiff_t(k * B), p.begin() + std::ptrdiff_t((k + 1) * B));
      CHECK(together == expected);
    }
  }

  TEST_CASE("indices(position) resumes inside an epoch, on any number of ranks") {
    DistributedSampler one(20, DistributedSamplerOptions().num_replicas(1).rank(0).seed(9));
    const Indices order = one.indices();
    DistributedSampler rank1(20, DistributedSamplerOptions().num_replicas(2).rank(1).seed(9));
    CHECK(rank1.indices(6) ==
          Indices{order[7], order[9], order[11], order[13], order[15], order[17], order[19]});
    CHECK(one.indices(18) == Indices{order[18], order[19]});
    CHECK(one.indices(25).empty());
    CHECK_THROWS_WITH_AS(one.indices(-1), doctest::Contains("expected a position >= 0"),
                         ValueError);
  }

  TEST_CASE("a bad rank, world size or dataset size is refused with PyTorch's text") {
    CHECK_THROWS_WITH_AS(DistributedSampler(4, DistributedSamplerOptions().num_replicas(2).rank(2)),
                         doctest::Contains("Invalid rank 2, rank should be in the interval [0, 1]"),
                         ValueError);
    CHECK_THROWS_WITH_AS(DistributedSampler(4, DistributedSamplerOptions().num_replicas(0).rank(0)),
                         doctest::Contains("expected num_replicas >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(
        DistributedSampler(-1, DistributedSamplerOptions().num_replicas(1).rank(0)),
        doctest::Contains("expected a dataset size >= 0, got -1"), ValueError);
    // Without options, the job's world size and this rank.
    DistributedSampler mine(10);
    CHECK(mine.num_replicas() == distributed::world_size());
    CHECK(mine.rank() == distributed::rank());
  }

  TEST_CASE("local_batch_size divides a global batch over the ranks, exactly when asked") {
    CHECK(distributed::local_batch_size(24, 2) == 12);
    CHECK(distributed::local_batch_size(24, 1) == 24);
    CHECK_THROWS_WITH_AS(
        distributed::local_batch_size(10, 3),
        doctest::Contains("distributed::local_batch_size: expected a global batch that divides by "
                          "the world size 3, got 10 (3 per rank, 1 left over); use 9 or 12"),
        ValueError);
    CHECK(distributed::local_batch_size(10, 3, /*exact=*/false) == 3);
    CHECK_THROWS_WITH_AS(distributed::local_batch_size(2, 4, false),
                         doctest::Contains("at least one example per rank"), ValueError);
    CHECK_THROWS_WITH_AS(distributed::local_batch_size(8, 0),
                         doctest::Contains("expected a world size >= 1, got 0"), ValueError);
  }
}  // TEST_SUITE
