// src/core/memory.cpp: the allocator policy of memory.hpp (glibc's mallopt; a no-op elsewhere).
#include "tapegrad/core/memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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

namespace {
// A cgroup's limit file: a number of bytes, or "max" (cgroup v2) / a huge number (v1) for none.
std::uint64_t cgroup_limit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return UINT64_MAX;
  std::uint64_t v = 0;
  if (std::sscanf(text.c_str(), "%lu", &v) != 1 || v == 0) return UINT64_MAX;
  return v;
}
}  // namespace

namespace {
// A limit of this process (`ulimit -v`, `ulimit -d`): past it, allocations fail whatever the
// machine has.
std::uint64_t process_limit(int resource) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return std::uint64_t(limit.rlim_cur);
}

// The machine's memory, or its control group's limit when lower.
std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t bytes = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page)
                                              : UINT64_MAX;
  bytes = std::min(bytes, cgroup_limit("/sys/fs/cgroup/memory.max"));
  bytes = std::min(bytes, cgroup_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  return bytes;
}
}  // namespace

std::uint64_t machine_memory_bytes() {
  return std::min({physical_memory_bytes(), process_limit(RLIMIT_AS), process_limit(RLIMIT_DATA)});
}

std::uint64_t process_memory_bytes() {
  // /proc/self/statm: the address space, the resident pages, shared, text, (unused), data + stack.
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0, resident = 0, shared = 0, text = 0, lib = 0, data = 0;
  if (!(in >> size >> resident >> shared >> text >> lib >> data)) return 0;
  const long page = ::sysconf(_SC_PAGE_SIZE);
  const std::uint64_t bytes = page > 0 ? std::uint64_t(page) : 4096;
  const std::uint64_t physical = physical_memory_bytes(), as = process_limit(RLIMIT_AS),
                      data_limit = process_limit(RLIMIT_DATA);
  if (as <= physical && as <= data_limit) return size * bytes;  // `ulimit -v` binds
  if (data_limit <= physical) return data * bytes;              // `ulimit -d` binds
  return resident * bytes;
}

std::string memory_text(double bytes) {
  std::ostringstream os;
  os.precision(bytes < 1024.0 * 1024 * 1024 * 10 ? 2 : 3);
  if (bytes >= 1024.0 * 1024 * 1024)
    os << std::fixed << bytes / (1024.0 * 1024 * 1024) << " GiB";
  else
    os << std::fixed << bytes / (1024.0 * 1024) << " MiB";
  return os.str();
}

}  // namespace tapegrad
