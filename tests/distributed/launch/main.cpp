// tests/distributed/launch/main.cpp: the doctest main of distributed_launch_tests, an ordinary
// (not MPI) program: its cases start mpirun themselves, or check the errors without MPI. It sets
// the environment that the ranks it starts inherit, as tests/main.cpp does for the other tests:
// one thread for tapegrad's kernels and OpenBLAS, and OpenBLAS's core warning off.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  setenv("TAPEGRAD_QUIET_BLAS", "1", 1);
  return doctest::Context(argc, argv).run();
}
