// src/distributed/mpi.hpp (private)
//
// What the distributed sources share: the one lock around every MPI call tapegrad makes (MPI is
// opened MPI_THREAD_SERIALIZED), the check that MPI is open, MPI's error codes turned into
// DistributedError, and the wait that gives up after timeout() instead of hanging for ever.
// Only files under src/distributed/ include <mpi.h>; the public headers never do.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "tapegrad/distributed/process_group.hpp"

namespace tapegrad::distributed::detail {

/// Held around every MPI call (never while waiting: waits poll with MPI_Test under it).
std::mutex& mpi_mutex();

/// Throws DistributedError naming `where` unless MPI is open.
void require_mpi(const char* where);

/// Throws DistributedError "where: <MPI's text for rc>" unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* where);

/// Polls `request` until it completes. Spins briefly, then sleeps between polls so that a rank
/// waiting for a slower one leaves the core to others. Throws DistributedError naming `where`
/// after timeout() seconds: another rank has died or is stuck.
void wait(MPI_Request& request, const char* where);

/// A duplicate of MPI_COMM_WORLD whose errors are returned, not fatal: each user of collectives
/// (the free functions, each DistributedDataParallel) has its own, so their operations never
/// interleave on one communicator.
MPI_Comm duplicate_world(const char* where);
/// The communicator of the free collectives (collectives.hpp).
MPI_Comm collectives_comm(const char* where);

}  // namespace tapegrad::distributed::detail
