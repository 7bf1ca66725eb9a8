// src/core/gemm.hpp (private to the core layer: its ops, fast kernels and profiler)
//
// The one matrix-multiply function every op uses, on row-major float matrices given by pointer
// and leading dimension (the distance in elements between consecutive rows). A leading dimension
// larger than the row length lets a kernel address a block of columns in place, e.g. one attention
// head inside a (T, heads * d_k) activation, without copying it out. It runs on the engine
// TAPEGRAD_GEMM chooses (tapegrad/core/gemm_engine.hpp): OpenBLAS's cblas_sgemm by default,
// oneDNN's dnnl_sgemm, or plain loops (the reference). Inside an autocast::bf16 scope it rounds
// both operands to bfloat16 first and sums their products in float32 (src/core/gemm_bf16.hpp:
// oneDNN's bf16 matmul, or the float32 engine on the rounded operands). Implemented in
// src/core/gemm.cpp, which with src/core/blas.cpp is the only file that includes cblas.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::detail {

/// Operands already rounded to bfloat16 inside an autocast::bf16 scope: their bits, compact in the
/// stored layout (the leading dimension is the stored row length), as a Linear keeps its input for
/// backward (src/core/bf16_saved.hpp). The product reads them where it would round A or B itself,
/// so one rounding serves the forward product, the copy kept and the backward product. Given only
/// inside a scope, where the float pointer of an operand given as bits is not read (it may be null).
struct Rounded {
  const std::uint16_t* a = nullptr;
  const std::uint16_t* b = nullptr;
};

/// C = alpha op(A) op(B) + beta C with op(A) (M, K) and op(B) (K, N), C (M, N). A is stored
/// (M, K), or (K, M) when trans_a; B is stored (K, N), or (N, K) when trans_b. beta = 0 writes C
/// without reading it. K = 0 gives C = beta C. Sizes must be below 2^31 (ShapeError otherwise).
/// M = 1 (one row, as when a model generates one token at a time) goes to sgemv.
void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha,
          const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
          std::size_t ldc, Rounded rounded = {});

/// gemm with B the storage of `weight` (a Linear's (out, in) weight, read as W^T or W): the same
/// product, but inside an autocast::bf16 scope a leaf weight is rounded to bfloat16 once per
/// version and kept until the scope closes, as PyTorch's autocast keeps a weight's cast.
void gemm_weight(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K,
                 float alpha, const float* A, std::size_t lda, const Tensor& weight,
                 std::size_t ldb, float beta, float* C, std::size_t ldc,
                 const std::uint16_t* rounded_a = nullptr);

/// How gemm cuts C (M, N) for threads: along its longer side (rows when M >= N) into `count`
/// blocks, [extent * b / count, extent * (b + 1) / count) for b < count, by the shape alone, never
/// by the thread count, so an element is computed by the same call on 1 thread or on several.
/// At most 2 blocks, each worth a thread (about a million multiply-adds or more).
struct GemmCut {
  bool by_rows;
  std::size_t extent, count;
  std::size_t begin(std::size_t b) const { return extent * b / count; }
};
GemmCut gemm_cut(std::size_t M, std::size_t N, std::size_t K);

}  // namespace tapegrad::detail
