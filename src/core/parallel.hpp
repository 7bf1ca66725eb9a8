// src/core/parallel.hpp (private)
//
// parallel_for: the one way a kernel uses threads (threads.hpp). [0, n) is cut into contiguous
// chunks, one per thread, the same cut for the same n and thread count; an element is handled by
// exactly one thread in its usual order, so results do not depend on the thread count. Loops too
// small to pay for waking a thread (several microseconds) run on the calling thread, and so does
// a parallel_for inside another one. The body must not throw.
#pragma once

#include <algorithm>
#include <cstddef>

#include "set_namespace.hpp"

namespace tapegrad::detail {

/// The number of threads a kernel may use (threads.hpp: set_num_threads, OMP_NUM_THREADS).
std::size_t pool_threads();
/// Runs task(context, t) for t = 0 .. count-1, t = 0 on the calling thread and the others on the
/// pool's workers, and returns when all have finished. Runs them one after another on the
/// calling thread when the pool is busy (another thread of the program is using it) or when
/// called from inside a task.
void run_tasks(std::size_t count, void (*task)(void* context, std::size_t t), void* context);

inline namespace TAPEGRAD_SET_NAMESPACE {  // one copy per kernel set: kernels/set_namespace.hpp
/// The grain of a loop over rows of row_length floats: rows enough for about 64 Ki floats, since
/// a pass over a float costs about a nanosecond or less and waking a thread several microseconds.
constexpr std::size_t rows_grain(std::size_t row_length) {
  return std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(row_length, 1));
}

/// Calls f(begin, end) on disjoint chunks covering [0, n), in parallel when n >= 2 * grain
/// (grain: the least work per thread worth a thread, in loop iterations).
template <class F>
void parallel_for(std::size_t n, std::size_t grain, F&& f) {
  const std::size_t threads = std::min(pool_threads(), n / std::max<std::size_t>(grain, 1));
  if (threads <= 1) {
    if (n > 0) f(std::size_t{0}, n);
    return;
  }
  struct Loop {
    F* f;
    std::size_t n, count;
  } loop{&f, n, threads};
  run_tasks(
      threads,
      [](void* context, std::size_t t) {
        const Loop& l = *static_cast<const Loop*>(context);
        const std::size_t base = l.n / l.count,
                          extra = l.n % l.count;  // the first `extra` chunks get one more
        const std::size_t begin = t * base + std::min(t, extra),
                          end = begin + base + (t < extra ? 1 : 0);
        if (begin < end) (*l.f)(begin, end);
      },
      &loop);
}

}  // namespace TAPEGRAD_SET_NAMESPACE
}  // namespace tapegrad::detail
