// tests/distributed/launch/main.cpp: the doctest main of distributed_launch_tests, an ordinary
// (not MPI) program: its cases start mpirun themselves, or check the errors without MPI.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
