// src/core/gemm.cpp: detail::gemm (gemm.hpp), the matrix product every op and the profiler use,
// on the engine TAPEGRAD_GEMM chose (tapegrad/core/gemm_engine.hpp). With src/core/blas.cpp, the
// only file that includes cblas. It sits on the bottom floor of the core so that the floors above
// (the profiler in src/autograd, the ops, the fast kernels) all call down to it.
// Threads (threads.hpp): each product is cut into up to 2 blocks of rows (or of columns, when it
// is wider than tall), the same blocks whatever the thread count, and the threads of tapegrad's
// pool share them out, each calling single-threaded sgemm on its blocks. A product with one row
// (generating one token at a time) calls sgemv instead, which reads B once and packs nothing.
#include "gemm.hpp"

#include <algorithm>
#include <climits>

#include <cblas.h>
#ifdef TAPEGRAD_ONEDNN
#include <omp.h>  // (Debian's oneDNN runs its threads with OpenMP: each call here gets one)

#include <oneapi/dnnl/dnnl.h>
#endif

#include "blas.hpp"
#include "gemm_bf16.hpp"
#include "parallel.hpp"
#include "tapegrad/core/autocast.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/gemm_engine.hpp"

namespace tapegrad::detail {

namespace {
// The reference engine: C = alpha op(A) op(B) + beta C, each element one float sum in k order.
void reference_gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K,
                    float alpha, const float* A, std::size_t lda, const float* B, std::size_t ldb,
                    float beta, float* C, std::size_t ldc) {
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (std::size_t k = 0; k < K; ++k)
        sum += (trans_a ? A[k * lda + i] : A[i * lda + k]) *
               (trans_b ? B[j * ldb + k] : B[k * ldb + j]);
      float& c = C[i * ldc + j];
      c = beta == 0.0f ? alpha * sum : alpha * sum + beta * c;
    }
}
}  // namespace

namespace {
void fp32_gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha,
               const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta,
               float* C, std::size_t ldc);
}  // namespace

namespace {
// Both entries: the bf16 product inside an autocast::bf16 scope (given B's tensor when it is a
// weight), the float32 one otherwise.
void multiply(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha,
              const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta,
              float* C, std::size_t ldc, const Tensor* weight_b, Rounded rounded) {
  const bool bf16 = autocast::bf16_enabled();
  if (M != 0 && N != 0 && K != 0 && bf16)
    return gemm_bf16(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, fp32_gemm,
                     weight_b, rounded);
  check<InvariantError>(bf16 || (!rounded.a && !rounded.b), "gemm: bf16 operands outside a scope");
  fp32_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
}  // namespace

void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha,
          const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
          std::size_t ldc, Rounded rounded) {
  multiply(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr, rounded);
}

void gemm_weight(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K,
                 float alpha, const float* A, std::size_t lda, const Tensor& weight,
                 std::size_t ldb, float beta, float* C, std::size_t ldc,
                 const std::uint16_t* rounded_a) {
  multiply(trans_a, trans_b, M, N, K, alpha, A, lda, weight.data().data(), ldb, beta, C, ldc,
           &weight, Rounded{rounded_a, nullptr});
}

// C is cut into blocks along its longer side, and the cut depends on the shape alone, never on
// the thread count (for any library): OpenBLAS may round an element differently depending on where
// its row falls in a call (its Haswell kernels do, its SkylakeX ones at some sizes), and oneDNN's
// own split of a product depends on its thread count, so only the same calls on 1 or 2 threads
// keep the results bit-identical. A block is worth a thread from about a million multiply-adds.
// At most 2 blocks: each call repacks the other operand, and in paired runs 4 blocks made W5 12 %
// slower on 1 thread and 20 % on 2 than 2 blocks did. The price: a product uses at most 2 threads,
// whatever set_num_threads says (the elementwise kernels use them all).
GemmCut gemm_cut(std::size_t M, std::size_t N, std::size_t K) {
  constexpr std::size_t kMaxBlocks = 2;
  const bool by_rows = M >= N;
  const std::size_t extent = by_rows ? M : N, other = by_rows ? N : M;
  const std::size_t grain =
      std::max<std::size_t>(1, (std::size_t{1} << 20) / std::max<std::size_t>(other * K, 1));
  return {by_rows, extent, std::clamp<std::size_t>(extent / grain, 1, kMaxBlocks)};
}

namespace {
// The float32 product, on the engine TAPEGRAD_GEMM chose.
void fp32_gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha,
               const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta,
               float* C, std::size_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // an empty sum: BLAS would reject lda = 0
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j)
        C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  check<ShapeError>(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && lda <= INT_MAX &&
                        ldb <= INT_MAX && ldc <= INT_MAX,
                    "gemm: expected matrix sizes below 2^31, got ", M, "x", K, " @ ", K, "x", N);
  const GemmEngine engine = gemm_engine();  // (a refused TAPEGRAD_GEMM throws here)
  if (engine == GemmEngine::reference)
    return reference_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  // Once: OpenBLAS's default thread count (threads.hpp) and the warning about its core (cpu.hpp).
  if (engine == GemmEngine::openblas) {
    static const bool blas_ready = (blas_first_use(), true);
    (void)blas_ready;
  }
  const CBLAS_TRANSPOSE op_a = trans_a ? CblasTrans : CblasNoTrans,
                        op_b = trans_b ? CblasTrans : CblasNoTrans;
  const GemmCut cut = gemm_cut(M, N, K);
  const bool by_rows = cut.by_rows;
  parallel_for(cut.count, 1, [&](std::size_t first, std::size_t last) {
    for (std::size_t b = first; b < last; ++b) {
      const std::size_t begin = cut.begin(b), end = cut.begin(b + 1);
      const int len = static_cast<int>(end - begin);
#ifdef TAPEGRAD_ONEDNN
      if (engine == GemmEngine::onednn) {
        // The same blocks, each on one oneDNN thread: oneDNN's own split of a product depends on
        // its thread count, and with it the last bits (its AVX2 kernels at 3 threads, measured).
        omp_set_num_threads(1);
        const std::size_t m = by_rows ? end - begin : M, nn = by_rows ? N : end - begin;
        const float* a = by_rows ? (trans_a ? A + begin : A + begin * lda) : A;
        const float* bb = by_rows ? B : (trans_b ? B + begin * ldb : B + begin);
        float* c = by_rows ? C + begin * ldc : C + begin;
        const dnnl_status_t status = dnnl_sgemm(
            trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', dnnl_dim_t(m), dnnl_dim_t(nn), dnnl_dim_t(K),
            alpha, a, dnnl_dim_t(lda), bb, dnnl_dim_t(ldb), beta, c, dnnl_dim_t(ldc));
        check<InvariantError>(status == dnnl_success, "gemm: oneDNN's dnnl_sgemm failed (status ",
                              int(status), ") on ", M, "x", K, " @ ", K, "x", N);
        continue;
      }
#endif
      if (M ==
          1) {  // one row: a matrix-vector product, C^T = op(B)^T op(A)^T; sgemm would pack all of B
        const float* x = A;  // op(A) (1, K): a row of A, or a column when trans_a
        const int incx = trans_a ? int(lda) : 1;  // (with M == 1, any second block is of columns)
        if (trans_b)                              // B stored (N, K): C[j] = B[j, :] . x
          cblas_sgemv(CblasRowMajor, CblasNoTrans, len, int(K), alpha, B + begin * ldb, int(ldb), x,
                      incx, beta, C + begin, 1);
        else  // B stored (K, N): C[j] = B[:, j] . x
          cblas_sgemv(CblasRowMajor, CblasTrans, int(K), len, alpha, B + begin, int(ldb), x, incx,
                      beta, C + begin, 1);
      } else if (by_rows)  // rows [begin, end) of C and of op(A); A^T's rows are columns of A
        cblas_sgemm(CblasRowMajor, op_a, op_b, len, int(N), int(K), alpha,
                    trans_a ? A + begin : A + begin * lda, int(lda), B, int(ldb), beta,
                    C + begin * ldc, int(ldc));
      else  // columns [begin, end) of C and of op(B); B^T's columns are rows of B
        cblas_sgemm(CblasRowMajor, op_a, op_b, int(M), len, int(K), alpha, A, int(lda),
                    trans_b ? B + begin * ldb : B + begin, int(ldb), beta, C + begin, int(ldc));
    }
  });
}
}  // namespace

}  // namespace tapegrad::detail
