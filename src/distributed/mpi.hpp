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
#include <type_traits>
#include <vector>

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

/// Every rank's `count` values of `mine`, in rank order: MPI_Iallgather under the lock, then
/// wait(). The exchange of sizes and fingerprints that comes before the larger transfers.
template <class T>
std::vector<T> all_gather(const T* mine, std::size_t count, MPI_Comm comm, const char* where) {
  static_assert(std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t>);
  const MPI_Datatype type = std::is_same_v<T, std::int64_t> ? MPI_INT64_T : MPI_UINT64_T;
  int ranks = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<T> all;
  {
    std::lock_guard lock(mpi_mutex());
    check_mpi(MPI_Comm_size(comm, &ranks), where);
    all.resize(count * static_cast<std::size_t>(ranks));
    check_mpi(MPI_Iallgather(mine, static_cast<int>(count), type, all.data(),
                             static_cast<int>(count), type, comm, &request),
              where);
  }
  wait(request, where);
  return all;
}

}  // namespace tapegrad::distributed::detail
