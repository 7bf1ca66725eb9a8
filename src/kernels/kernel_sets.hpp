// src/kernels/kernel_sets.hpp (private)
//
// How an op finds its kernels for the set in use (docs/kernels.md). Each op with a fast kernel
// has a small struct of function pointers, one table of it per set:
//
//   tapegrad::kernels::reference::layer_norm   src/ops/layer_norm_reference.cpp
//   tapegrad::kernels::baseline::layer_norm    src/ops/layer_norm_fast.cpp, compiled for x86-64
//   tapegrad::kernels::avx2::layer_norm        the same file, compiled for x86-64-v3
//   tapegrad::kernels::avx512::layer_norm      the same file, compiled for x86-64-v4
//
// TAPEGRAD_KERNEL_TABLES(LayerNormKernels, layer_norm), written inside namespace tapegrad::kernels,
// declares the four tables and defines kernels::layer_norm_kernels(), which returns the table of
// the set in use (cpu.hpp). The op calls it once per call; it costs one atomic load.
#pragma once

#include <string>
#include <vector>

#include "tapegrad/cpu.hpp"

namespace tapegrad::detail {
/// The set in use (tapegrad::cpu_capability()).
CpuCapability current_cpu_capability();
/// Throws ValueError naming `where` unless wanted is one of available.
void check_cpu_can_run(CpuCapability wanted, const std::vector<CpuCapability>& available,
                       const std::string& where);
}  // namespace tapegrad::detail

namespace tapegrad::kernels {
/// The table of the set in use among the four, indexed like CpuCapability.
template <class Kernels>
const Kernels& pick(const Kernels* reference, const Kernels* baseline, const Kernels* avx2,
                    const Kernels* avx512) {
  const Kernels* const sets[] = {reference, baseline, avx2, avx512};
  return *sets[static_cast<int>(detail::current_cpu_capability())];
}
}  // namespace tapegrad::kernels

// The x86 sets exist only in x86 builds (CMake defines TAPEGRAD_X86_KERNEL_SETS); elsewhere their
// entries are null and never picked, because cpu.cpp refuses those sets.
#if defined(TAPEGRAD_X86_KERNEL_SETS)
#define TAPEGRAD_X86_KERNEL_TABLES(Type, name) \
  namespace avx2 {                             \
  extern const Type name;                      \
  }                                            \
  namespace avx512 {                           \
  extern const Type name;                      \
  }
#define TAPEGRAD_X86_KERNEL_TABLE(set, name) &::tapegrad::kernels::set::name
#else
#define TAPEGRAD_X86_KERNEL_TABLES(Type, name)
#define TAPEGRAD_X86_KERNEL_TABLE(set, name) nullptr
#endif

// clang-format off
#define TAPEGRAD_KERNEL_TABLES(Type, name)                                                      \
  namespace reference { extern const Type name; }                                               \
  namespace baseline { extern const Type name; }                                                \
  TAPEGRAD_X86_KERNEL_TABLES(Type, name)                                                        \
  inline const Type& name##_kernels() {                                                         \
    return ::tapegrad::kernels::pick<Type>(                                                     \
        &::tapegrad::kernels::reference::name, &::tapegrad::kernels::baseline::name,            \
        TAPEGRAD_X86_KERNEL_TABLE(avx2, name), TAPEGRAD_X86_KERNEL_TABLE(avx512, name));        \
  }
// clang-format on
