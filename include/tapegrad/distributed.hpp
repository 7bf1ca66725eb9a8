// include/tapegrad/distributed.hpp: the umbrella header of tapegrad::distributed, data-parallel
// training over MPI. A separate library (tapegrad::distributed, built when CMake finds MPI) that
// the core library knows nothing about; docs/distributed.md explains it.
#pragma once

#include "tapegrad/distributed/process_group.hpp"
#include "tapegrad/distributed/collectives.hpp"
#include "tapegrad/distributed/data_parallel.hpp"
#include "tapegrad/distributed/sampler.hpp"
