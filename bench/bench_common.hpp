// bench/bench_common.hpp
//
// What every W1-W5 program (docs/benchmarks.md) shares: a monotonic clock, warm-up then counted
// runs, and one machine-readable line per figure in the shape the PyTorch peer prints:
//     W1-S threads=1 median_ms=0.1234 min_ms=... max_ms=... n=20 warmup=5 ...
// Threads: `--threads N` sets tapegrad's pool (threads.hpp) to N before anything else runs;
// bench/compare also sets OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to N, as for the peer.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <tapegrad/core/memory.hpp>
#include <tapegrad/core/threads.hpp>

namespace bench {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Stats {
  double median, min, max;
};

inline Stats stats(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  const double median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  return {median, t.front(), t.back()};
}

/// Parses "--threads N" (default 1) and "--only NAME[,NAME]", and sets tapegrad's thread count.
struct Args {
  int threads = 1;
  std::string only;
  bool wants(const std::string& name) const {
    return only.empty() || ("," + only + ",").find("," + name + ",") != std::string::npos;
  }
};

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      a.threads = std::atoi(argv[++i]);
    } else if (arg == "--only" && i + 1 < argc) {
      a.only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--only NAME,...]\n", argv[0]);
      std::exit(2);
    }
  }
  if (a.threads < 1) {
    std::fprintf(stderr, "--threads: expected a positive number, got %d\n", a.threads);
    std::exit(2);
  }
  tapegrad::set_num_threads(a.threads);
  tapegrad::keep_freed_memory(true);  // as a training program does (memory.hpp)
  return a;
}

/// The value of `flag` as a whole number >= 1, or an exception naming the flag.
inline std::int64_t parse_positive(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || n < 1)
    throw std::invalid_argument(flag + ": expected a whole number >= 1, got '" + value + "'");
  return n;
}

/// Prints "NAME threads=T median_ms=... min_ms=... max_ms=... n=N warmup=W EXTRA".
inline void print_ms(const std::string& name, int threads, const std::vector<double>& seconds,
                     int warmup, const std::string& extra = "") {
  const Stats s = stats(seconds);
  std::printf("%s threads=%d median_ms=%.4f min_ms=%.4f max_ms=%.4f n=%zu warmup=%d%s\n",
              name.c_str(), threads, s.median * 1e3, s.min * 1e3, s.max * 1e3, seconds.size(),
              warmup, extra.c_str());
  std::fflush(stdout);
}

}  // namespace bench
