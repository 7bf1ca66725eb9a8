// src/distributed/progress.hpp (private)
//
// Progress: a thread that drives non-blocking MPI operations while the training thread computes.
// Open MPI moves the data of an MPI_Iallreduce only inside MPI calls (there is no asynchronous
// progress for shared memory or TCP): a transfer started during backward would wait, untouched,
// until backward ended, and nothing would overlap. So this thread polls the outstanding requests
// (MPI_Testsome, under the library's MPI lock) with short sleeps in between, and marks each one
// done when it completes. It costs little CPU: a poll takes microseconds, every ~100 us.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tapegrad::distributed::detail {

class Progress {
 public:
  Progress();
  ~Progress();  ///< stops the thread (outstanding requests are left)
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Hands over a started request; `*done` becomes true when it has completed.
  void add(MPI_Request request, std::atomic<bool>* done);
  /// Returns once *done is true. Throws DistributedError naming `where` if MPI reported an error
  /// or after distributed::timeout() seconds.
  void wait(const std::atomic<bool>& done, const char* where);
  /// Waits up to `seconds` for every request handed over to complete; false if some have not (a
  /// collective another rank never joined). Before the buffers of those requests can be freed.
  bool drain(double seconds);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable work_;       // new requests, or stop
  std::condition_variable completed_;  // a request completed, or an error
  std::vector<MPI_Request> incoming_;
  std::vector<std::atomic<bool>*> incoming_flags_;
  std::size_t outstanding_ = 0;  // requests handed over and not completed
  bool stop_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace tapegrad::distributed::detail
