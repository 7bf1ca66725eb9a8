// tests/core/test_memory.cpp: the allocator policy (memory.hpp). Nothing here is timed: the policy's
// effect is checked by counting the page faults that re-allocating a large buffer causes. What
// glibc's heap holds depends on everything the process did before, so each case measures in a
// process of its own: run inside the whole program, it runs the program again with itself alone.
#include <doctest/doctest.h>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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

// True when the case has been run in a process of its own (and CHECKed its exit status there): the
// caller returns. False in that process, where the caller measures.
bool ran_alone(const std::string& test_case) {
  if (std::getenv("TAPEGRAD_MEMORY_CASE_ALONE")) return false;
  std::string filter = "--test-case=" + test_case;
  char* argv[] = {const_cast<char*>("core_tests"), filter.data(), const_cast<char*>("--minimal"),
                  nullptr};
  std::string flag = "TAPEGRAD_MEMORY_CASE_ALONE=1";
  std::vector<char*> env{flag.data()};
  for (char** e = environ; *e; ++e) env.push_back(*e);
  env.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, env.data()) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "the case failed on its own: ",
                test_case);
  return true;
}
}  // namespace

TEST_SUITE("memory") {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)  // ASan brings its own allocator
  TEST_CASE("making tensors changes no allocator setting: glibc's defaults stay until asked") {
    if (ran_alone("making tensors changes no allocator setting*")) return;
    Tensor first(Array{1.f});
    faults_of_a_buffer(96);
    CHECK_FALSE(keeps_freed_memory());
    CHECK(faults_of_a_buffer(96) > 96 * 128);  // mmap'ed afresh: its pages fault in again
  }

  TEST_CASE("after keep_freed_memory(true) a freed large buffer is reused without faulting") {
    if (ran_alone("after keep_freed_memory(true) a freed large buffer*")) return;
    keep_freed_memory(true);
    CHECK(keeps_freed_memory());
    faults_of_a_buffer(64);               // the heap grows once
    CHECK(faults_of_a_buffer(64) < 256);  // then the same pages are reused
  }

  TEST_CASE(
      "keep_freed_memory(false) restores glibc's defaults: a new large block is mmap'ed each "
      "time") {
    if (ran_alone("keep_freed_memory(false) restores glibc's defaults*")) return;
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

  TEST_CASE("the memory a process may use is at most its address-space and data limits") {
    const std::uint64_t machine = machine_memory_bytes();
    CHECK(machine > (std::uint64_t(64) << 20));  // a machine that runs these tests has more
    // Each limit lowered to half of that for a moment, then given back (a soft limit may rise
    // again to the hard one); nothing is allocated meanwhile.
    for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
      CAPTURE(resource);
      rlimit old{};
      REQUIRE(getrlimit(resource, &old) == 0);
      rlimit limited = old;
      limited.rlim_cur = rlim_t(machine / 2);
      if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur <= limited.rlim_cur) continue;
      REQUIRE(setrlimit(resource, &limited) == 0);
      const std::uint64_t limited_bytes = machine_memory_bytes();
      REQUIRE(setrlimit(resource, &old) == 0);
      CHECK(limited_bytes == machine / 2);
    }
  }

  TEST_CASE("the memory a process holds is its address space under ulimit -v, else its resident") {
    const auto statm = [] {  // (address space, resident) in bytes
      std::ifstream in("/proc/self/statm");
      std::uint64_t size = 0, resident = 0;
      in >> size >> resident;
      return std::pair{size * 4096, resident * 4096};
    };
    if (sysconf(_SC_PAGE_SIZE) != 4096 || statm().first == 0) {
      MESSAGE("skipped: no /proc/self/statm with 4 KiB pages here");
      return;
    }
    rlimit old{};
    REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
    if (old.rlim_cur == RLIM_INFINITY) {
      const std::uint64_t held = process_memory_bytes();
      const auto [size, resident] = statm();
      CHECK(held > 0);
      CHECK(held < size);  // the resident part: far less than the address space of a test program
      CHECK(double(held) == doctest::Approx(double(resident)).epsilon(0.05));
    }
    rlimit limited = old;
    limited.rlim_cur = rlim_t(std::min<std::uint64_t>(machine_memory_bytes(), old.rlim_cur) / 2);
    if (limited.rlim_cur <= statm().first) return;  // (a limit below what is held already)
    REQUIRE(setrlimit(RLIMIT_AS, &limited) == 0);
    const std::uint64_t held = process_memory_bytes();
    REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
    CHECK(double(held) == doctest::Approx(double(statm().first)).epsilon(0.05));
  }
}
