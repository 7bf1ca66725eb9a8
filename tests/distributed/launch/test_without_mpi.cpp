// tests/distributed/launch/test_without_mpi.cpp: everything distributed, called in a process that
// never opened MPI, says so, naming the call, instead of crashing inside MPI.
#include <doctest/doctest.h>

#include <tapegrad/distributed.hpp>
#include <tapegrad/tapegrad.hpp>

#include "distributed/models.hpp"

using namespace tapegrad;

namespace {
// "<call>: MPI is not initialised; create a distributed::Environment at the top of main ..."
doctest::Contains not_initialised(const std::string& call) {
  return doctest::Contains(
      (call + ": MPI is not initialised; create a distributed::Environment at the top of main")
          .c_str());
}
}  // namespace

TEST_SUITE("distributed.without_mpi") {
  TEST_CASE("without an Environment, every call is a DistributedError naming it and the fix") {
    CHECK_FALSE(distributed::is_initialized());
    CHECK_THROWS_WITH_AS(distributed::rank(), not_initialised("distributed::rank"),
                         distributed::DistributedError);
    CHECK_THROWS_WITH_AS(distributed::world_size(), not_initialised("distributed::world_size"),
                         distributed::DistributedError);
    CHECK_THROWS_WITH_AS(distributed::barrier(), not_initialised("distributed::barrier"),
                         distributed::DistributedError);
    Array a = {1.0f, 2.0f};
    CHECK_THROWS_WITH_AS(distributed::all_reduce(a), not_initialised("distributed::all_reduce"),
                         distributed::DistributedError);
    CHECK_THROWS_WITH_AS(distributed::broadcast(a), not_initialised("distributed::broadcast"),
                         distributed::DistributedError);
    ddp_test::TinyLM model(ddp_test::TinyOptions{}, 1);
    CHECK_THROWS_WITH_AS(distributed::DistributedDataParallel{model},
                         not_initialised("DistributedDataParallel(TinyLM)"),
                         distributed::DistributedError);
    CHECK_THROWS_WITH_AS(distributed::DistributedSampler(10),
                         doctest::Contains("distributed::world_size"),
                         distributed::DistributedError);
    // With its sizes given, the sampler needs no MPI.
    distributed::DistributedSampler sampler(
        10, distributed::DistributedSamplerOptions().num_replicas(2).rank(1).shuffle(false));
    CHECK(sampler.indices() == std::vector<std::int64_t>{1, 3, 5, 7, 9});
  }
}  // TEST_SUITE
