// src/core/onednn_threads.hpp (private to src/core): oneDNN's threads, as many as tapegrad's.
// Debian's oneDNN parallelises with OpenMP, whose thread count is OMP_NUM_THREADS or else every
// core: a program asked for --threads 1 would multiply on all of them, and its idle OpenMP threads
// would spin between products. Each oneDNN call first sets OpenMP's count to set_num_threads's.
#pragma once

#ifdef TAPEGRAD_ONEDNN
#include <omp.h>

#include "tapegrad/core/threads.hpp"

namespace tapegrad::detail {
inline void match_onednn_threads() {
  const int n = get_num_threads();
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
}
}  // namespace tapegrad::detail
#endif
