// include/tapegrad/core/detail/object_cache.hpp (implementation detail; a learner can skip it)
//
// A per-thread cache of freed small blocks, for the objects every recorded op makes and every
// backward frees: tape entries and tensor records. A backward frees hundreds of them at once and
// the next forward asks for as many again; glibc keeps only seven freed blocks of a size per
// thread, so without this cache the rest go through its slower bins (W2, the per-op cost of the
// engine, spent a third of its time in malloc and free). A block freed on another thread simply
// joins that thread's cache.
#pragma once

#include <cstddef>
#include <memory>

namespace tapegrad::detail {

/// At least `bytes` bytes aligned like max_align_t: from this thread's cache when it has a block
/// of that size class, else from operator new.
void* cached_allocate(std::size_t bytes);
/// Gives back a block of `bytes` bytes (the size it was asked with).
void cached_deallocate(void* p, std::size_t bytes) noexcept;

/// A standard allocator over the cache, for std::allocate_shared.
template <class T>
struct CachingAllocator {
  using value_type = T;
  CachingAllocator() = default;
  template <class U>
  CachingAllocator(const CachingAllocator<U>&) noexcept {}  // NOLINT: allocators convert implicitly
  T* allocate(std::size_t n) { return static_cast<T*>(cached_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { cached_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const CachingAllocator<U>&) const noexcept {
    return true;
  }
};

/// A base class whose objects (and those of its derived classes) come from the cache: tape
/// entries derive from it.
struct CachedObject {
  static void* operator new(std::size_t bytes) { return cached_allocate(bytes); }
  static void operator delete(void* p, std::size_t bytes) { cached_deallocate(p, bytes); }
};

}  // namespace tapegrad::detail
