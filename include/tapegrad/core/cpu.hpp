// include/tapegrad/core/cpu.hpp
//
// What runs on this CPU: tapegrad's kernel set and OpenBLAS's kernel core.
//
// tapegrad compiles its hot kernels several times into the one library, once per instruction set
// (docs/kernels.md), and picks one set once, at the first use, from what the CPU reports (CPUID),
// as PyTorch's CPU capability dispatch does:
//
//   reference   plain loops, no threads, no intrinsics: the version to read (slowest)
//   baseline    the fast kernels for any x86-64 CPU (SSE2), or for the build's target elsewhere
//   avx2        the fast kernels for AVX2 + FMA CPUs (x86-64-v3: Haswell, Zen and later)
//   avx512      the fast kernels for AVX-512 F/BW/CD/DQ/VL CPUs (x86-64-v4: Skylake-X, Zen 4 ...)
//
// The environment variable TAPEGRAD_CPU_CAPABILITY=reference|baseline|avx2|avx512 forces a set;
// a set this CPU (or this build: non-x86 builds have reference and baseline only) cannot run is
// refused with a ValueError at the first use, never run. Every set gives the same bits (the
// exceptions and their bounds: docs/semantics.md#kernel-sets).
//
// Matrix products go to OpenBLAS, which picks its own kernels ("core") at load time and may fall
// back to old ones on a CPU it does not know; blas_info() says which it picked, and the first
// matrix product warns once on stderr when that core is below what the CPU can run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tapegrad {

/// The instruction sets tapegrad's kernels are compiled for, slowest first.
enum class CpuCapability { reference, baseline, avx2, avx512 };

/// The set in use. The first call chooses it: TAPEGRAD_CPU_CAPABILITY if set (ValueError if the
/// name is unknown or this CPU cannot run it), else the best set this CPU can run.
CpuCapability cpu_capability();
/// Switches every op to another set from now on (ValueError if this CPU cannot run it).
void set_cpu_capability(CpuCapability capability);
/// The sets this CPU and this build can run, slowest first (reference and baseline always).
std::vector<CpuCapability> available_cpu_capabilities();
/// "reference", "baseline", "avx2" or "avx512".
std::string_view to_string(CpuCapability capability);
/// The set named name (as to_string writes it); ValueError for any other name.
CpuCapability cpu_capability_from_string(std::string_view name);

/// The BLAS library behind the matrix products, as it reports itself.
struct BlasInfo {
  std::string library;  ///< "OpenBLAS"
  std::string version;  ///< "0.3.21"
  std::string config;   ///< openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  std::string core;     ///< openblas_get_corename(): the kernels in use: "Haswell", "SkylakeX" ...
};
BlasInfo blas_info();

/// Turns off (or on again) the one warning the first matrix product writes to stderr when
/// OpenBLAS's core is below what this CPU can run. TAPEGRAD_QUIET_BLAS=1 turns it off too.
void set_blas_warning(bool enabled);
/// The warning's text for the core in use, or "" when the core suits this CPU.
std::string blas_core_warning();

/// One line for a program's log: tapegrad's version, its kernel set, the CPU's best set, and
/// OpenBLAS's version and core, e.g.
/// "tapegrad 0.1.0: kernels avx512 (CPU: avx512), OpenBLAS 0.3.21 core SkylakeX", and ", matrix
/// products onednn" (or reference) when TAPEGRAD_GEMM chose another engine than OpenBLAS
/// (gemm_engine.hpp). Never throws: a refused TAPEGRAD_CPU_CAPABILITY shows as "kernels refused
/// (<the error>)".
std::string environment_line();

}  // namespace tapegrad
