// src/core/memory.cpp: the allocator policy of memory.hpp (glibc's mallopt; a no-op elsewhere).
#include "tapegrad/core/memory.hpp"

#include <atomic>
#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tapegrad {

namespace {
std::atomic<bool> keeping{false};
}  // namespace

void keep_freed_memory(bool keep) {
#if defined(__GLIBC__)
  if (keep) {
    mallopt(M_MMAP_MAX, 0);              // no block comes from (or goes back to) its own mmap
    mallopt(M_TRIM_THRESHOLD, INT_MAX);  // the free top of the heap stays mapped
  } else {
    mallopt(M_MMAP_MAX, 65536);  // glibc's defaults (DEFAULT_MMAP_MAX, 128 KiB thresholds)
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    malloc_trim(0);
  }
  keeping = keep;
#else
  (void)keep;
#endif
}

bool keeps_freed_memory() { return keeping; }

}  // namespace tapegrad
