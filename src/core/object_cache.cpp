// src/core/object_cache.cpp: the per-thread cache of small blocks (detail/object_cache.hpp).
//
// Sizes are rounded up to a multiple of 64 bytes; blocks up to 1 KiB are cached, at most 4096 of
// each size per thread (enough for a backward through a few thousand entries), the rest go to
// operator new and delete directly. A cached block keeps the pointer to the next in its first
// bytes. A thread's cache is emptied when the thread ends.
#include "tapegrad/core/detail/object_cache.hpp"

#include <new>

namespace tapegrad::detail {

namespace {
constexpr std::size_t kGranule = 64, kClasses = 16, kMaxCached = 4096;

thread_local bool cache_gone = false;  // trivially destructible: still readable after ~Cache

struct FreeBlock {
  FreeBlock* next;
};

struct Cache {
  FreeBlock* head[kClasses] = {};
  std::size_t count[kClasses] = {};
  ~Cache() {
    cache_gone = true;  // blocks freed later, during this thread's exit, go to delete
    for (std::size_t c = 0; c < kClasses; ++c)
      while (head[c] != nullptr) {
        FreeBlock* b = head[c];
        head[c] = b->next;
        ::operator delete(b);
      }
  }
};

thread_local Cache cache;

// The size class of a request, or kClasses when it is too large to cache.
std::size_t size_class(std::size_t bytes) {
  const std::size_t c = (bytes + kGranule - 1) / kGranule - 1;
  return bytes == 0 ? 0 : c;
}
}  // namespace

void* cached_allocate(std::size_t bytes) {
  const std::size_t c = size_class(bytes);
  if (c >= kClasses || cache_gone) return ::operator new(bytes);
  if (FreeBlock* b = cache.head[c]) {
    cache.head[c] = b->next;
    --cache.count[c];
    return b;
  }
  return ::operator new((c + 1) * kGranule);
}

void cached_deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  const std::size_t c = size_class(bytes);
  if (c >= kClasses || cache_gone || cache.count[c] >= kMaxCached) {
    ::operator delete(p);
    return;
  }
  auto* b = static_cast<FreeBlock*>(p);
  b->next = cache.head[c];
  cache.head[c] = b;
  ++cache.count[c];
}

}  // namespace tapegrad::detail
