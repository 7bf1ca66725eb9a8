// src/core/gemm_bf16.hpp (private to src/core): the matrix product of an autocast::bf16 scope
// (core/autocast.hpp), which detail::gemm (src/core/gemm.hpp) hands every product to while a
// scope is open. Same arguments as detail::gemm.
#pragma once

#include <cstddef>

#include "gemm.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad::detail {

/// C = alpha bf16(op(A)) bf16(op(B)) + beta C: the operands rounded to bfloat16 (to nearest, ties
/// to even), their products summed in float32. On oneDNN's bf16 kernels when tapegrad was built
/// with oneDNN and TAPEGRAD_GEMM is not reference; otherwise the rounded operands go through
/// `fp32_gemm` (a float32 product of two bfloat16 values is exact, so only the order of the sums
/// differs from oneDNN's).
using Fp32Gemm = void (*)(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*,
                          std::size_t, const float*, std::size_t, float, float*, std::size_t);
/// weight_b, when given, is the tensor whose storage B is (a Linear's weight): a leaf's is rounded
/// once per version and kept until this thread's autocast scope closes (drop_rounded_weights).
/// An operand given in `rounded` is read as those bits; its float pointer is not read.
void gemm_bf16(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha,
               const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta,
               float* C, std::size_t ldc, Fp32Gemm fp32_gemm, const Tensor* weight_b = nullptr,
               Rounded rounded = {});

/// Forgets this thread's rounded weights: the outermost autocast::bf16 scope's end calls it.
void drop_rounded_weights();

}  // namespace tapegrad::detail
