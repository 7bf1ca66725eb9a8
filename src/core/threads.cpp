// src/core/threads.cpp
//
// tapegrad's thread pool (threads.hpp, parallel.hpp). Workers are started on first use and live
// until the program ends. A worker waits for work by spinning briefly and then sleeping in the
// kernel (std::atomic::wait, a futex on Linux); the caller waits for the workers the same way.
// Why not OpenMP: libgomp spins for about 300,000 iterations (milliseconds) before sleeping, and
// the wait policy can only be changed through the environment before the program starts. On a
// machine whose cores are shared with other processes, a spinning worker takes the time slices
// its own caller needs: W1-S went from 0.3 ms to 14-40 ms per step with two OpenMP threads.
#include "tapegrad/core/threads.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel.hpp"
#include "tapegrad/core/errors.hpp"

namespace tapegrad {

namespace {

// Waits until value != seen: a short spin (some tens of microseconds), then a futex sleep.
template <class T>
T wait_for_change(const std::atomic<T>& value, T seen) {
  for (int i = 0; i < 1024; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != seen) return now;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  T now;
  while ((now = value.load(std::memory_order_acquire)) == seen)
    value.wait(seen, std::memory_order_acquire);
  return now;
}

thread_local bool inside_task = false;

class Pool {
 public:
  // Runs task(context, t) for t < count; the caller takes t = 0. See detail::run_tasks.
  void run(std::size_t count, void (*task)(void*, std::size_t), void* context) {
    auto inline_run = [&] {
      for (std::size_t t = 0; t < count; ++t) task(context, t);
    };
    if (inside_task) return inline_run();  // nested: this thread is one of the pool's
    std::unique_lock<std::mutex> busy(mutex_, std::try_to_lock);
    if (!busy.owns_lock()) return inline_run();  // another thread of the program is using it
    while (workers_.size() + 1 < count)
      workers_.push_back(std::make_unique<Worker>(*this, workers_.size() + 1));
    task_ = task;
    context_ = context;
    remaining_.store(static_cast<std::uint32_t>(count - 1), std::memory_order_relaxed);
    for (std::size_t t = 1; t < count; ++t) workers_[t - 1]->start();
    inside_task = true;
    task(context, 0);
    inside_task = false;
    std::uint32_t left;
    while ((left = remaining_.load(std::memory_order_acquire)) != 0)
      wait_for_change(remaining_, left);
  }

 private:
  struct Worker {
    Worker(Pool& pool, std::size_t t) : thread([this, &pool, t] { loop(pool, t); }) {
      thread.detach();
    }
    void start() {
      epoch.fetch_add(1, std::memory_order_release);  // publishes the pool's task_ and context_
      epoch.notify_one();
    }
    void loop(Pool& pool, std::size_t t) {
      inside_task = true;  // a task's own parallel_for runs inline
      std::uint32_t seen = 0;
      for (;;) {
        seen = wait_for_change(epoch, seen);
        pool.task_(pool.context_, t);
        if (pool.remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
          pool.remaining_.notify_one();
      }
    }
    alignas(64) std::atomic<std::uint32_t> epoch{0};  // bumped once per task given to this worker
    std::thread thread;
  };

  std::mutex mutex_;                              // one caller at a time
  std::vector<std::unique_ptr<Worker>> workers_;  // worker t - 1 runs task t
  void (*task_)(void*, std::size_t) = nullptr;
  void* context_ = nullptr;
  alignas(64) std::atomic<std::uint32_t> remaining_{0};
};

// Never destroyed: its detached workers sleep in it until the program ends.
Pool& pool() {
  static Pool* const instance = new Pool;
  return *instance;
}

std::atomic<int> configured_threads{0};  // 0: not chosen yet

int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

void set_num_threads(int n) {
  check<ValueError>(n >= 1, "set_num_threads: expected a positive number of threads, got ", n);
  configured_threads = n;
}

int get_num_threads() {
  int n = configured_threads.load();
  if (n == 0) {
    int expected = 0;
    configured_threads.compare_exchange_strong(expected, default_threads());
    n = configured_threads.load();
  }
  return n;
}

namespace detail {
std::size_t pool_threads() { return static_cast<std::size_t>(get_num_threads()); }
void run_tasks(std::size_t count, void (*task)(void*, std::size_t), void* context) {
  pool().run(count, task, context);
}
}  // namespace detail

}  // namespace tapegrad
