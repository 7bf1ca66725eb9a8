// tests/main.cpp: the doctest main. One option of its own, --cpu-capability=<set>: CTest runs the
// op and module tests once more per kernel set with it (CMakeLists.txt). It forces the set the way
// a user does (TAPEGRAD_CPU_CAPABILITY), or skips the run (exit 77) when this CPU cannot run it.
//
// It also sets the environment every test runs in, and the example programs the tests start
// inherit: one thread for tapegrad's kernels and OpenBLAS, so that every run gives the same bits
// (docs/semantics.md#randomness; tests/transformer/test_threads.cpp checks that the thread count
// changes no bit), and OpenBLAS's core warning off, since the tests read what the programs print and the
// warning would add a line on a machine where OpenBLAS runs a weaker core than the CPU could (or
// one forced with OPENBLAS_CORETYPE). kernels.blas_fallback_core_is_warned_about_once checks the
// warning itself.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <tapegrad/core/cpu.hpp>

int main(int argc, char** argv) {
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  setenv("TAPEGRAD_QUIET_BLAS", "1", 1);
  constexpr std::string_view kOption = "--cpu-capability=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with(kOption)) continue;
    const auto sets = tapegrad::available_cpu_capabilities();
    const auto wanted = tapegrad::cpu_capability_from_string(arg.substr(kOption.size()));
    if (std::find(sets.begin(), sets.end(), wanted) == sets.end()) {
      std::printf("skipped: this CPU cannot run the %s kernels\n", argv[i] + kOption.size());
      return 77;
    }
    setenv("TAPEGRAD_CPU_CAPABILITY", argv[i] + kOption.size(), 1);
  }
  return doctest::Context(argc, argv).run();
}
