// tests/distributed/main.cpp: the doctest main of distributed_tests, which every rank runs at once
// under mpirun (CTest starts it on 1 rank and on 2). Rank 0 prints the report; a rank that failed
// prints its own after it. The exit status is non-zero on every rank if any rank failed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>
#include <sstream>

#include <tapegrad/distributed.hpp>

namespace distributed = tapegrad::distributed;

int main(int argc, char** argv) {
  distributed::Environment mpi(argc, argv);
  // A case that leaves the ranks out of step fails within a minute instead of hanging.
  distributed::set_timeout(60);
  doctest::Context context(argc, argv);
  std::ostringstream report;
  if (distributed::rank() != 0) context.setCout(&report);
  const int failed = context.run();
  std::cout << std::flush;
  const bool any_failed =
      distributed::all_reduce(failed != 0 ? 1.0 : 0.0, distributed::ReduceOp::max) > 0;
  for (int r = 1; r < distributed::world_size(); ++r) {
    distributed::barrier();
    if (distributed::rank() == r && failed != 0)
      std::cout << "---- rank " << r << " ----\n" << report.str() << std::flush;
  }
  if (context.shouldExit()) return failed;
  return any_failed ? 1 : 0;
}
