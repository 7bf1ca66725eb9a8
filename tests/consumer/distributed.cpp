// tests/consumer/distributed.cpp: the installed tapegrad::distributed, on every rank of
// `mpirun -np N`: the ranks average their numbers and check the mean.
#include <iostream>

#include <tapegrad/distributed.hpp>
#include <tapegrad/tapegrad.hpp>

int main(int argc, char** argv) {
  using namespace tapegrad;
  distributed::Environment mpi(argc, argv);
  const int r = distributed::rank(), n = distributed::world_size();
  Array x = {static_cast<float>(r)};
  distributed::all_reduce(x, distributed::ReduceOp::average);
  const float expected = static_cast<float>(n - 1) / 2.0f;
  if (r == 0)
    std::cout << "consumer_distributed: mean rank " << x(0) << " over " << n << " ranks (expected "
              << expected << ")\n";
  return x(0) == expected ? 0 : 1;
}
