// src/core/set_namespace.hpp (private)
//
// TAPEGRAD_SET_NAMESPACE: the name of the inline namespace that every inline helper a fast kernel
// uses (exp_f32, erf_f32, parallel_for, ...) is defined in. CMake compiles each src/kernels/*.cpp
// once per kernel set with TAPEGRAD_CAPABILITY=baseline, avx2 or avx512; the rest of the library
// is compiled without it and gets `generic`. Why: an inline function is a weak symbol, one copy in
// every object that did not inline it, and the linker keeps any one of the copies for all callers.
// Without a namespace per set, an avx512 copy of exp_f32 could be the one a baseline kernel calls,
// and the program would die of an illegal instruction on a CPU without AVX-512. With it, each set's
// copies have names of their own (tapegrad::detail::avx2::exp_f32); callers write the name as
// before. tests/kernels/check_weak_symbols.sh checks that no weak symbol is shared across sets.
//
//   namespace tapegrad::detail {
//   inline namespace TAPEGRAD_SET_NAMESPACE {
//   inline float exp_f32(float x) { ... }
//   }
//   }
#pragma once

#if defined(TAPEGRAD_CAPABILITY)
#define TAPEGRAD_SET_NAMESPACE TAPEGRAD_CAPABILITY
#else
#define TAPEGRAD_SET_NAMESPACE generic
#endif
