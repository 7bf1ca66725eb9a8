// src/distributed/progress.cpp: the polling loop of Progress (progress.hpp says why it exists).
#include "progress.hpp"

#include <chrono>

#include "mpi.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad::distributed::detail {

Progress::Progress() : thread_([this] { run(); }) {}

Progress::~Progress() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void Progress::add(MPI_Request request, std::atomic<bool>* done) {
  {
    std::lock_guard lock(mutex_);
    incoming_.push_back(request);
    incoming_flags_.push_back(done);
    ++outstanding_;
  }
  work_.notify_one();
}

void Progress::wait(const std::atomic<bool>& done, const char* where) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout());
  std::unique_lock lock(mutex_);
  const bool finished =
      completed_.wait_until(lock, deadline, [&] { return done.load() || !error_.empty(); });
  if (!error_.empty()) fail<DistributedError>(where, ": ", error_);
  if (!finished)
    fail<DistributedError>(
        where, ": rank ", rank(), " of ", world_size(), " waited ", timeout(),
        " s for the other ranks (distributed::timeout()); one of them has died or is stuck");
}

bool Progress::drain(double seconds) {
  std::unique_lock lock(mutex_);
  return completed_.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
    return outstanding_ == 0 || !error_.empty();
  }) && outstanding_ == 0;
}

void Progress::run() {
  std::vector<MPI_Request> requests;
  std::vector<std::atomic<bool>*> flags;
  std::vector<int> indices;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (requests.empty()) work_.wait(lock, [&] { return stop_ || !incoming_.empty(); });
      if (stop_) return;
      requests.insert(requests.end(), incoming_.begin(), incoming_.end());
      flags.insert(flags.end(), incoming_flags_.begin(), incoming_flags_.end());
      incoming_.clear();
      incoming_flags_.clear();
    }
    int completed = 0;
    indices.resize(requests.size());
    int rc = MPI_SUCCESS;
    {
      std::lock_guard lock(mpi_mutex());
      rc = MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &completed,
                        indices.data(), MPI_STATUSES_IGNORE);
    }
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, text, &len);
      std::lock_guard lock(mutex_);
      error_ =
          "MPI failed while moving gradients: " + std::string(text, static_cast<std::size_t>(len));
      completed_.notify_all();
      return;
    }
    if (completed > 0 && completed != MPI_UNDEFINED) {
      std::lock_guard lock(mutex_);  // under the lock: a waiter cannot miss the wake-up
      for (int i = 0; i < completed; ++i)
        flags[static_cast<std::size_t>(indices[static_cast<std::size_t>(i)])]->store(true);
      outstanding_ -= static_cast<std::size_t>(completed);
      std::size_t kept = 0;
      for (std::size_t i = 0; i < requests.size(); ++i)
        if (requests[i] != MPI_REQUEST_NULL) {  // MPI_Testsome nulls the completed ones
          requests[kept] = requests[i];
          flags[kept] = flags[i];
          ++kept;
        }
      requests.resize(kept);
      flags.resize(kept);
      completed_.notify_all();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

}  // namespace tapegrad::distributed::detail
