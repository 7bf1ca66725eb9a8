// tests/core/test_cpu.cpp: the kernel set in use (cpu.hpp), forcing one, refusing one the CPU cannot
// run, and what OpenBLAS reports about itself.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <tapegrad/core/cpu.hpp>
#include <tapegrad/core/errors.hpp>
#include <tapegrad/core/threads.hpp>

#include "../../src/core/dispatch.hpp"

using namespace tapegrad;

namespace {
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("every CPU runs the reference and baseline sets, and the sets are named") {
    const auto sets = available_cpu_capabilities();
    REQUIRE(sets.size() >= 2);
    CHECK(sets[0] == CpuCapability::reference);
    CHECK(sets[1] == CpuCapability::baseline);
    CHECK(std::is_sorted(sets.begin(), sets.end()));
    for (CpuCapability set : {CpuCapability::reference, CpuCapability::baseline,
                              CpuCapability::avx2, CpuCapability::avx512})
      CHECK(cpu_capability_from_string(to_string(set)) == set);
    CHECK_THROWS_WITH_AS(cpu_capability_from_string("avx1024"),
                         "cpu_capability_from_string: expected reference, baseline, avx2 or "
                         "avx512, got 'avx1024'",
                         ValueError);
  }

  TEST_CASE(
      "the set in use is the best the CPU can run, or the one TAPEGRAD_CPU_CAPABILITY names") {
    const char* forced = std::getenv("TAPEGRAD_CPU_CAPABILITY");
    const std::string name = forced ? forced : "";
    if (name.empty()) {
      CHECK(cpu_capability() == available_cpu_capabilities().back());
    } else if (name == "avx1024") {  // CTest's cpu.unknown_set_in_environment_is_refused
      CHECK_THROWS_WITH_AS(cpu_capability(),
                           "TAPEGRAD_CPU_CAPABILITY=avx1024: expected reference, baseline, avx2 "
                           "or avx512, got 'avx1024'",
                           ValueError);
    } else {
      CHECK(to_string(cpu_capability()) == name);
    }
  }

  TEST_CASE("set_cpu_capability switches every available set in and refuses the others") {
    const CpuCapability saved = cpu_capability();
    const auto sets = available_cpu_capabilities();
    for (CpuCapability set : {CpuCapability::reference, CpuCapability::baseline,
                              CpuCapability::avx2, CpuCapability::avx512}) {
      if (std::find(sets.begin(), sets.end(), set) != sets.end()) {
        set_cpu_capability(set);
        CHECK(cpu_capability() == set);
      } else {
        CHECK_THROWS_AS(set_cpu_capability(set), ValueError);
      }
    }
    set_cpu_capability(saved);
  }

  TEST_CASE("a set this CPU cannot run is refused with the sets it can") {
    // What an AVX2-less CPU would answer to set_cpu_capability(avx512) (the same check runs for
    // TAPEGRAD_CPU_CAPABILITY, with that as the place).
    CHECK_THROWS_WITH_AS(
        detail::check_cpu_can_run(CpuCapability::avx512,
                                  {CpuCapability::reference, CpuCapability::baseline},
                                  "set_cpu_capability"),
        "set_cpu_capability: expected a kernel set this CPU and build can run (reference, "
        "baseline), got "
        "avx512; unset TAPEGRAD_CPU_CAPABILITY to let tapegrad choose the best one",
        ValueError);
    CHECK_NOTHROW(detail::check_cpu_can_run(CpuCapability::baseline,
                                            {CpuCapability::reference, CpuCapability::baseline},
                                            "set_cpu_capability"));
  }

  TEST_CASE("blas_info names OpenBLAS, its version and the core in use") {
    const BlasInfo info = blas_info();
    CHECK(info.library == "OpenBLAS");
    CHECK(!info.version.empty());
    CHECK(std::isdigit(static_cast<unsigned char>(info.version[0])));
    CHECK(!info.core.empty());
    CHECK(contains(info.config, info.version));
    const std::string line = environment_line();
    CHECK(contains(line, "kernels " + std::string(to_string(cpu_capability()))));
    CHECK(contains(line, "core " + info.core));
  }

  TEST_CASE("OpenBLAS's thread count is set explicitly, and a non-positive count is refused") {
    const int saved = get_blas_num_threads();
    set_blas_num_threads(2);
    CHECK(get_blas_num_threads() == 2);
    set_blas_num_threads(saved);
    CHECK_THROWS_WITH_AS(set_blas_num_threads(0),
                         "set_blas_num_threads: expected a positive number of threads, got 0",
                         ValueError);
  }
}
