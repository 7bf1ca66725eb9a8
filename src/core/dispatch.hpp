// src/core/dispatch.hpp (private)
//
// How a call reaches the kernel set in use (docs/kernels.md). Every kernel is first a plain
// function, the reference: src/ops/layer_norm.cpp defines ops::layer_norm_forward as loops under
// its formula. An op calls it through pick, so that go-to-definition on the name lands on the
// formula:
//
//   const auto forward = kernels::pick<layer_norm_forward>();   // the reference, or a set's version
//   forward(x, weight, bias, y, ...);
//
// A fast version of it lives in src/kernels/layer_norm.cpp, which CMake compiles once per set
// (baseline, avx2, avx512; namespace tapegrad::kernels::<set>), and says whose version it is:
//
//   TAPEGRAD_FAST_KERNEL(tapegrad::ops::layer_norm_forward, forward);
//
// The fast version's type is the reference's (decltype): a signature that differs in one argument
// does not compile, so a kernel's signature is written where its reference is, and nowhere else.
// pick returns the reference under the reference set and the set's version otherwise. It costs one
// atomic load. This is PyTorch's DispatchStub (ATen/native/DispatchStub.h) without a registry: the
// op names each set's pointer, so the linker brings every set's kernel along with the op.
#pragma once

#include <string>
#include <vector>

#include "tapegrad/core/cpu.hpp"

namespace tapegrad::detail {
/// Throws ValueError naming `where` unless wanted is one of available (cpu.cpp).
void check_cpu_can_run(CpuCapability wanted, const std::vector<CpuCapability>& available,
                       const std::string& where);
}  // namespace tapegrad::detail

namespace tapegrad::kernels {

/// The fast versions of the kernel `Reference`, one per set, each defined by a src/kernels/ file
/// with TAPEGRAD_FAST_KERNEL. The avx2 and avx512 sets exist in x86-64 builds only (CMake defines
/// TAPEGRAD_X86_KERNEL_SETS), and cpu.cpp refuses them elsewhere.
template <auto Reference>
struct Fast {
  static const decltype(Reference) baseline;
#if defined(TAPEGRAD_X86_KERNEL_SETS)
  static const decltype(Reference) avx2;
  static const decltype(Reference) avx512;
#endif
};

// Clang warns that Fast<Reference>::avx2 has no definition in the op's file: it is defined in the
// src/kernels/ file, as an explicit specialization, and the linker finds it there (PyTorch's
// DispatchStub.h silences the same warning).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wundefined-var-template"
#endif

/// The version of `Reference` that the set in use runs: `Reference` itself under the reference set.
template <auto Reference>
decltype(Reference) pick() {
  switch (cpu_capability()) {
    case CpuCapability::baseline: return Fast<Reference>::baseline;
#if defined(TAPEGRAD_X86_KERNEL_SETS)
    case CpuCapability::avx2: return Fast<Reference>::avx2;
    case CpuCapability::avx512: return Fast<Reference>::avx512;
#endif
    default: return Reference;
  }
}

}  // namespace tapegrad::kernels

/// In a src/kernels/ file, at namespace scope outside the set's namespace: `fast`, a function of
/// this file's set (tapegrad::kernels::<set>::fast), is that set's version of `reference`.
#define TAPEGRAD_FAST_KERNEL(reference, fast)                                           \
  template <>                                                                           \
  const decltype(&reference) tapegrad::kernels::Fast<&reference>::TAPEGRAD_CAPABILITY = \
      &tapegrad::kernels::TAPEGRAD_CAPABILITY::fast
