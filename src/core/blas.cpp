// src/core/blas.cpp
//
// OpenBLAS as tapegrad uses it (cpu.hpp, threads.hpp): what it reports about itself, the one
// warning when its kernel core is below what the CPU can run, and its thread count.
// OpenBLAS picks its core when the library loads, from CPUID; a CPU newer than the OpenBLAS
// release may get an old fallback core (OpenBLAS 0.3.21 runs Prescott's SSE3 kernels on some
// recent Xeons), silently, and OPENBLAS_CORETYPE in the environment forces one. A weaker core is
// correct but slow: Prescott's SSE3 kernels are several times slower than the AVX-512 ones, and
// Haswell's 256-bit kernels use half of each AVX-512 register (on an AMD Zen 5, sgemm at 94
// GFLOP/s on them against 175 on SkylakeX's, one thread), so an AVX-512 CPU on Haswell's core is
// warned about too. OPENBLAS_CORETYPE=<core> overrides the choice; the warning says so.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <cblas.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "blas.hpp"
#include "tapegrad/core/cpu.hpp"
#include "tapegrad/core/gemm_engine.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/threads.hpp"

namespace tapegrad {

namespace {

std::atomic<bool> warning_enabled{true};
std::atomic<int> chosen_blas_threads{0};  // 0: set_blas_num_threads was not called

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The CPU's name from CPUID ("AMD EPYC 9R14 96-Core Processor"), or "unknown".
std::string cpu_name() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned int regs[12] = {};
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000004u) {
    for (unsigned int i = 0; i < 3; ++i)
      __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2],
                  &regs[4 * i + 3]);
    std::string name(reinterpret_cast<const char*>(regs), sizeof regs);
    name = name.substr(0, name.find('\0'));
    const auto first = name.find_first_not_of(' '), last = name.find_last_not_of(' ');
    if (first != std::string::npos) return name.substr(first, last - first + 1);
  }
#endif
  return "unknown";
}

bool one_of(const std::string& core, std::initializer_list<const char*> cores) {
  for (const char* c : cores)
    if (lower(core) == lower(c)) return true;
  return false;
}

}  // namespace

BlasInfo blas_info() {
  BlasInfo info;
  info.library = "OpenBLAS";
  info.config = openblas_get_config();
  info.core = openblas_get_corename();
  std::istringstream words(info.config);
  std::string first;
  words >> first >> info.version;  // "OpenBLAS 0.3.21 ..."
  return info;
}

std::string blas_core_warning() {
  const std::vector<CpuCapability> sets = available_cpu_capabilities();
  const CpuCapability best = sets.back();
  const std::string core = openblas_get_corename();
  // OpenBLAS's cores for AVX-512 CPUs, and those with AVX2 + FMA kernels (the AVX-512 ones too).
  const bool core_avx512 = one_of(core, {"SkylakeX", "Cooperlake", "SapphireRapids"});
  const bool core_avx2 = core_avx512 || one_of(core, {"Haswell", "Zen"});
  const char* fix = nullptr;
  if (best == CpuCapability::avx512 && !core_avx512) fix = "SkylakeX";
  if (best == CpuCapability::avx2 && !core_avx2) fix = "Haswell";
  if (fix == nullptr) return "";
  std::ostringstream os;
  os << "tapegrad: warning: OpenBLAS " << blas_info().version << " runs its " << core
     << " kernels, but this CPU (" << cpu_name() << ") can run its "
     << (best == CpuCapability::avx512 ? "AVX-512" : "AVX2")
     << " ones: matrix products may be up to several times slower. Run with OPENBLAS_CORETYPE="
     << fix;
  // oneDNN picks its kernels itself: measured on the baby GPT (Zen 5, OpenBLAS forced onto its
  // Haswell kernels), TAPEGRAD_GEMM=onednn made the step 1.6 times as fast; with OpenBLAS on the
  // right kernels the two are within a few percent, so OpenBLAS stays the default.
  const std::vector<GemmEngine> engines = available_gemm_engines();
  if (std::find(engines.begin(), engines.end(), GemmEngine::onednn) != engines.end())
    os << ", or with TAPEGRAD_GEMM=onednn (oneDNN's products, which choose their kernels by CPU)";
  os << " (silence this with TAPEGRAD_QUIET_BLAS=1 or tapegrad::set_blas_warning(false))";
  return os.str();
}

void set_blas_warning(bool enabled) { warning_enabled = enabled; }

void set_blas_num_threads(int n) {
  check<ValueError>(n >= 1, "set_blas_num_threads: expected a positive number of threads, got ", n);
  chosen_blas_threads = n;
  openblas_set_num_threads(n);
}

int get_blas_num_threads() { return openblas_get_num_threads(); }

std::string environment_line() {
  std::string kernels;
  try {
    kernels = std::string(to_string(cpu_capability()));
  } catch (const ValueError& e) {  // a refused TAPEGRAD_CPU_CAPABILITY: the first op will throw it
    kernels = std::string("refused (") + e.what() + ")";
  }
  const BlasInfo blas = blas_info();
  std::ostringstream os;
  os << "tapegrad " << TAPEGRAD_VERSION << ": kernels " << kernels
     << " (CPU: " << to_string(available_cpu_capabilities().back()) << "), " << blas.library << ' '
     << blas.version << " core " << blas.core;
  std::string engine;
  try {
    engine = std::string(to_string(gemm_engine()));
  } catch (const ValueError& e) {  // a refused TAPEGRAD_GEMM: the first product will throw it
    engine = std::string("refused (") + e.what() + ")";
  }
  if (engine != "openblas") os << ", matrix products " << engine;
  return os.str();
}

namespace detail {
// Called once, by the first matrix product (src/core/gemm.cpp).
void blas_first_use() {
  if (chosen_blas_threads.load() == 0) openblas_set_num_threads(1);  // the default: threads.hpp
  const char* quiet = std::getenv("TAPEGRAD_QUIET_BLAS");
  if (!warning_enabled.load() ||
      (quiet != nullptr && *quiet != '\0' && std::strcmp(quiet, "0") != 0))
    return;
  const std::string warning = blas_core_warning();
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
}
}  // namespace detail

}  // namespace tapegrad
