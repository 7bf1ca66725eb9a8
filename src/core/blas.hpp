// src/core/blas.hpp (private)
//
// The first matrix product's one-time call into src/core/blas.cpp.
#pragma once

namespace tapegrad::detail {
/// Sets OpenBLAS's default thread count (threads.hpp) and writes the core warning (cpu.hpp), if
/// any, to stderr. src/core/gemm.cpp calls it once, at the first product.
void blas_first_use();
}  // namespace tapegrad::detail
