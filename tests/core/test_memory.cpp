// tests/core/test_memory.cpp: the allocator policy (memory.hpp). Nothing here is timed: the policy's
// effect is checked by counting the page faults that re-allocating a large buffer causes.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <tapegrad/core.hpp>

using namespace tapegrad;

namespace {
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Allocates and writes an array of `mib` MiB (256 pages per MiB), then frees it; returns the
// page faults taken.
long faults_of_a_buffer(std::size_t mib) {
  const long before = minor_faults();
  {
    Tensor t(Array::from_shape({mib << 18}));
    float* p = t.mutable_data().data();
    for (std::size_t i = 0; i < t.numel(); i += 1024) p[i] = 1.0f;  // one write per 4 KiB page
  }
  return minor_faults() - before;
}
}  // namespace

TEST_SUITE("memory") {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)  // ASan brings its own allocator
  TEST_CASE("making tensors changes no allocator setting: glibc's defaults stay until asked") {
    Tensor first(Array{1.f});
    faults_of_a_buffer(96);
    CHECK_FALSE(keeps_freed_memory());
    CHECK(faults_of_a_buffer(96) > 96 * 128);  // mmap'ed afresh: its pages fault in again
  }

  TEST_CASE("after keep_freed_memory(true) a freed large buffer is reused without faulting") {
    keep_freed_memory(true);
    CHECK(keeps_freed_memory());
    faults_of_a_buffer(64);               // the heap grows once
    CHECK(faults_of_a_buffer(64) < 256);  // then the same pages are reused
  }

  TEST_CASE(
      "keep_freed_memory(false) restores glibc's defaults: a new large block is mmap'ed each "
      "time") {
    // 96 MiB is larger than any free block the heap holds, so glibc maps it and unmaps it on free
    keep_freed_memory(false);
    CHECK_FALSE(keeps_freed_memory());
    faults_of_a_buffer(96);
    CHECK(faults_of_a_buffer(96) > 96 * 128);
    keep_freed_memory(true);
    CHECK(keeps_freed_memory());
    faults_of_a_buffer(96);
    CHECK(faults_of_a_buffer(96) < 256);
  }
#endif
}
