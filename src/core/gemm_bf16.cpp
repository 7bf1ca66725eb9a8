// src/core/gemm_bf16.cpp: the matrix products of an autocast::bf16 scope (gemm_bf16.hpp).
//
// Each operand is first copied, rounded, into a compact buffer of its stored layout (a block of
// columns addressed with a larger leading dimension, as an attention head is, becomes a matrix of
// its own). Then either oneDNN's matmul primitive multiplies the bfloat16 buffers into the float32
// C, or the rounded values, as floats, go through the float32 engine: the same products, summed
// in another order.
#include "gemm_bf16.hpp"

#include <cstdio>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#ifdef TAPEGRAD_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "onednn_threads.hpp"
#include "tapegrad/core/autocast.hpp"
#include "tapegrad/core/cpu.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/gemm_engine.hpp"

namespace tapegrad::detail {

namespace {

// The stored matrix (rows x cols, leading dimension ld) rounded to bfloat16, compact (ld = cols):
// the bfloat16 bits, or (as_float) the floats they stand for. This loop is a tenth or more of a
// bf16 training step, and it is integer arithmetic that every instruction set does alike, so GCC
// compiles it three times (AVX-512, AVX2 and the x86-64 baseline) and the loader picks the widest
// this CPU runs: the same bits from each.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TAPEGRAD_WIDEST_X86 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TAPEGRAD_WIDEST_X86
#endif
TAPEGRAD_WIDEST_X86
void compact_bf16(const float* src, std::size_t rows, std::size_t cols, std::size_t ld,
                  std::uint16_t* dst) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) dst[r * cols + c] = autocast::to_bf16(src[r * ld + c]);
}
TAPEGRAD_WIDEST_X86
void compact_rounded(const float* src, std::size_t rows, std::size_t cols, std::size_t ld,
                     float* dst) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      dst[r * cols + c] = autocast::round_to_bf16(src[r * ld + c]);
}

// A working buffer of this thread's that only grows: each product would otherwise allocate (and
// zero) two fresh arrays, whose page faults cost as much as the rounding. It keeps the largest
// operands this thread has rounded (an lm_head of GPT-2 124M: 77 MB) until the thread ends.
template <class T>
T* scratch(std::size_t n, int which) {
  struct Buffer {
    std::unique_ptr<T[]> data;
    std::size_t size = 0;
  };
  thread_local Buffer buffers[2];
  Buffer& b = buffers[which];
  if (b.size < n) b.data = std::make_unique_for_overwrite<T[]>(n), b.size = n;
  return b.data.get();
}

#ifdef TAPEGRAD_ONEDNN
// Whether oneDNN multiplies bfloat16 natively here: the instruction set it runs (the CPU's,
// capped by ONEDNN_MAX_CPU_ISA if set) has AVX512-BF16 or AMX. Without either, oneDNN emulates
// the products with plain AVX-512 (or refuses them without AVX-512: then the float32 engine
// multiplies the rounded operands).
bool native_bf16() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

// oneDNN's matmul primitives, one per shape, transposes, leading dimension of C, alpha and beta,
// built on first use (building one takes far longer than running a small product) and kept, the
// most recently used first, up to kCapacity of them: a program whose shapes keep changing (a
// growing key-value cache, say) would otherwise keep every primitive it ever built. The lock
// guards the list only; a product runs outside it, on its thread's own stream.
class Matmuls {
 public:
  using Key =
      std::tuple<std::size_t, std::size_t, std::size_t, bool, bool, std::size_t, float, float>;
  static constexpr std::size_t kCapacity = 256;
  Matmuls() : engine_(dnnl::engine::kind::cpu, 0) {}

  // C = alpha op(A) op(B) + beta C for compact bfloat16 A and B; false when oneDNN has no
  // implementation for this CPU (then the caller takes the float32 path).
  bool run(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
           std::uint16_t* A, std::uint16_t* B, float beta, float* C, std::size_t ldc) {
    using dnnl::memory;
    const auto dim = [](std::size_t v) { return memory::dim(v); };
    // op(A) (M, K): stored (M, K), or (K, M) read transposed; likewise op(B) (K, N).
    const memory::desc a({dim(M), dim(K)}, memory::data_type::bf16,
                         ta ? memory::dims{1, dim(M)} : memory::dims{dim(K), 1});
    const memory::desc b({dim(K), dim(N)}, memory::data_type::bf16,
                         tb ? memory::dims{1, dim(K)} : memory::dims{dim(N), 1});
    const memory::desc c({dim(M), dim(N)}, memory::data_type::f32, memory::dims{dim(ldc), 1});
    const std::shared_ptr<const dnnl::matmul> product =
        find_or_build({M, N, K, ta, tb, ldc, alpha, beta}, a, b, c);
    if (!product) return false;
    thread_local dnnl::stream stream(engine_);
    memory am(a, engine_, A), bm(b, engine_, B), cm(c, engine_, C);
    product->execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
    return true;
  }

  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return index_.size();
  }

 private:
  using Entry = std::pair<Key, std::shared_ptr<const dnnl::matmul>>;

  // The primitive for `key`, moved to the front; built (and the least recently used one dropped
  // beyond kCapacity) when absent; null when oneDNN cannot build it here.
  std::shared_ptr<const dnnl::matmul> find_or_build(const Key& key, const dnnl::memory::desc& a,
                                                    const dnnl::memory::desc& b,
                                                    const dnnl::memory::desc& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = index_.find(key); it != index_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second);
      return it->second->second;
    }
    const auto [alpha, beta] = std::pair(std::get<6>(key), std::get<7>(key));
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    std::shared_ptr<const dnnl::matmul> product;
    try {
      product = std::make_shared<const dnnl::matmul>(
          dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine_));
    } catch (const dnnl::error&) {
      return nullptr;
    }
    recent_.emplace_front(key, product);
    index_[key] = recent_.begin();
    if (recent_.size() > kCapacity) {
      index_.erase(recent_.back().first);
      recent_.pop_back();  // a thread still running it holds its own shared_ptr
    }
    return product;
  }

  dnnl::engine engine_;
  std::mutex mutex_;
  std::list<Entry> recent_;  // most recently used first
  std::map<Key, std::list<Entry>::iterator> index_;
};

Matmuls& matmuls() {
  static Matmuls m;
  return m;
}

// Says once, on standard error, that this CPU has no bfloat16 instructions.
void warn_if_emulated() {
  static const bool warned = [] {
    if (!native_bf16())
      std::fprintf(stderr,
                   "tapegrad: warning: this CPU has neither AVX512-BF16 nor AMX (or "
                   "ONEDNN_MAX_CPU_ISA hides them): the bf16 matrix products are emulated, "
                   "slower than float32 ones, with the same results (docs/bf16.md)\n");
    return true;
  }();
  (void)warned;
}
#endif

}  // namespace

void gemm_bf16(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
               const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta,
               float* C, std::size_t ldc, Fp32Gemm fp32_gemm) {
  // The stored shapes: A is (M, K), or (K, M) when ta; B is (K, N), or (N, K) when tb.
  const std::size_t a_rows = ta ? K : M, a_cols = ta ? M : K;
  const std::size_t b_rows = tb ? N : K, b_cols = tb ? K : N;
#ifdef TAPEGRAD_ONEDNN
  // A small product (an attention head's, say) costs less through the float32 engine than the
  // conversion and call of a oneDNN primitive: the same rounded operands, summed in another order.
  constexpr std::size_t kMinMultiplyAdds = std::size_t(1) << 20;
  if (gemm_engine() != GemmEngine::reference && M * N * K >= kMinMultiplyAdds) {
    warn_if_emulated();
    match_onednn_threads();
    std::uint16_t* a = scratch<std::uint16_t>(a_rows * a_cols, 0);
    std::uint16_t* b = scratch<std::uint16_t>(b_rows * b_cols, 1);
    compact_bf16(A, a_rows, a_cols, lda, a);
    compact_bf16(B, b_rows, b_cols, ldb, b);
    if (matmuls().run(ta, tb, M, N, K, alpha, a, b, beta, C, ldc)) return;
  }
#endif
  float* a = scratch<float>(a_rows * a_cols, 0);
  float* b = scratch<float>(b_rows * b_cols, 1);
  compact_rounded(A, a_rows, a_cols, lda, a);
  compact_rounded(B, b_rows, b_cols, ldb, b);
  fp32_gemm(ta, tb, M, N, K, alpha, a, a_cols, b, b_cols, beta, C, ldc);
}

}  // namespace tapegrad::detail

namespace tapegrad::autocast {
std::size_t bf16_products_kept() {
#ifdef TAPEGRAD_ONEDNN
  return detail::matmuls().size();
#else
  return 0;
#endif
}
}  // namespace tapegrad::autocast
