// src/core/gemm_bf16.cpp: the matrix products of an autocast::bf16 scope (gemm_bf16.hpp).
//
// Each operand is first copied, rounded, into a compact buffer of its stored layout (a block of
// columns addressed with a larger leading dimension, as an attention head is, becomes a matrix of
// its own). Then either oneDNN's matmul primitive multiplies the bfloat16 buffers into the float32
// C, or the rounded values, as floats, go through the float32 engine: the same products, summed
// in another order.
#include "gemm_bf16.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef TAPEGRAD_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "gemm.hpp"
#include "parallel.hpp"
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
#define TAPEGRAD_WIDEST_X86 \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
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
void widen_bf16(const std::uint16_t* src, std::size_t n, float* dst) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = autocast::from_bf16(src[i]);
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
  using Key = std::tuple<std::size_t, std::size_t, std::size_t, bool, bool, std::size_t,
                         std::size_t, std::size_t, float, float>;
  static constexpr std::size_t kCapacity = 256;
  Matmuls() : engine_(dnnl::engine::kind::cpu, 0) {}

  // C = alpha op(A) op(B) + beta C for bfloat16 A and B with leading dimensions lda and ldb, on
  // one oneDNN thread; false when oneDNN has no implementation for this CPU (then the caller takes
  // the float32 path).
  bool run(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
           const std::uint16_t* A, std::size_t lda, const std::uint16_t* B, std::size_t ldb,
           float beta, float* C, std::size_t ldc) {
    // One OpenMP thread for this thread's oneDNN calls, before a product is built: oneDNN plans a
    // product's split (the sums' order) for the threads it sees then, and keeps the plan.
    if (omp_get_max_threads() != 1) omp_set_num_threads(1);
    using dnnl::memory;
    const auto dim = [](std::size_t v) { return memory::dim(v); };
    // op(A) (M, K): stored (M, K), or (K, M) read transposed; likewise op(B) (K, N).
    const memory::desc a({dim(M), dim(K)}, memory::data_type::bf16,
                         ta ? memory::dims{1, dim(lda)} : memory::dims{dim(lda), 1});
    const memory::desc b({dim(K), dim(N)}, memory::data_type::bf16,
                         tb ? memory::dims{1, dim(ldb)} : memory::dims{dim(ldb), 1});
    const memory::desc c({dim(M), dim(N)}, memory::data_type::f32, memory::dims{dim(ldc), 1});
    const std::shared_ptr<const Product> product =
        find_or_build({M, N, K, ta, tb, lda, ldb, ldc, alpha, beta}, a, b, c);
    if (!product) return false;
    thread_local dnnl::stream stream(engine_);
    memory am(a, engine_, const_cast<std::uint16_t*>(A)),
        bm(b, engine_, const_cast<std::uint16_t*>(B)), cm(c, engine_, C);
    // Its working memory is this thread's: oneDNN's own would be shared by every thread that runs
    // the product (Debian's build has no ONEDNN_ENABLE_CONCURRENT_EXEC), and two blocks of one
    // shape run at once.
    memory scratchpad(
        product->scratchpad, engine_,
        scratch<std::uint8_t>(std::max<std::size_t>(product->scratchpad.get_size(), 1), 0));
    product->matmul.execute(stream, {{DNNL_ARG_SRC, am},
                                     {DNNL_ARG_WEIGHTS, bm},
                                     {DNNL_ARG_DST, cm},
                                     {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
    return true;
  }

  // Whether oneDNN has bf16 products on this CPU at all (any shape will tell): AVX-512 or more.
  bool available() {
    static const bool yes = [this] {
      const std::uint16_t one[1] = {0x3f80};
      float c[1] = {0.0f};
      return run(false, false, 1, 1, 1, 1.0f, one, 1, one, 1, 0.0f, c, 1);
    }();
    return yes;
  }

  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return index_.size();
  }

 private:
  struct Product {
    dnnl::matmul matmul;
    dnnl::memory::desc scratchpad;  // the working memory it needs
  };
  using Entry = std::pair<Key, std::shared_ptr<const Product>>;

  // The primitive for `key`, moved to the front; built (and the least recently used one dropped
  // beyond kCapacity) when absent; null when oneDNN cannot build it here.
  std::shared_ptr<const Product> find_or_build(const Key& key, const dnnl::memory::desc& a,
                                               const dnnl::memory::desc& b,
                                               const dnnl::memory::desc& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = index_.find(key); it != index_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second);
      return it->second->second;
    }
    const auto [alpha, beta] = std::pair(std::get<8>(key), std::get<9>(key));
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    std::shared_ptr<const Product> product;
    try {
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine_);
      product = std::make_shared<const Product>(Product{dnnl::matmul(pd), pd.scratchpad_desc()});
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

#ifdef TAPEGRAD_ONEDNN
namespace {
// ---- weights rounded once per version -----------------------------------------------------------
// A weight's bfloat16 copy, made the first time a product of this thread's autocast scope reads
// it and kept until the scope closes, as PyTorch's autocast keeps a weight's cast: a training step
// rounds each weight once where it read it twice (forward and dx), and a generated token reads
// the copies where it rounded every weight again. The entry holds the tensor, and serves its copy
// only while the tensor's storage is still at B and its version unchanged, so an in-place change
// (which bumps the version) or a replaced storage is never served a stale copy.
struct RoundedWeight {
  Tensor owner;
  const float* storage;
  std::uint64_t version;
  std::size_t rows, cols, ld;
  std::vector<std::uint16_t> bits;
};
thread_local std::map<const float*, RoundedWeight> rounded_weights;

const std::uint16_t* rounded_weight(const Tensor& w, const float* B, std::size_t rows,
                                    std::size_t cols, std::size_t ld) {
  RoundedWeight& e = rounded_weights[B];
  if (e.owner.defined() && e.owner.data().data() == e.storage && e.storage == B &&
      e.owner.version() == e.version && e.rows == rows && e.cols == cols && e.ld == ld)
    return e.bits.data();
  e = RoundedWeight{w, B, w.version(), rows, cols, ld, std::vector<std::uint16_t>(rows * cols)};
  compact_bf16(B, rows, cols, ld, e.bits.data());
  return e.bits.data();
}
}  // namespace
#endif

void drop_rounded_weights() {
#ifdef TAPEGRAD_ONEDNN
  rounded_weights.clear();
#endif
}

void gemm_bf16(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
               const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta,
               float* C, std::size_t ldc, Fp32Gemm fp32_gemm, const Tensor* weight_b,
               Rounded rounded) {
  // The stored shapes: A is (M, K), or (K, M) when ta; B is (K, N), or (N, K) when tb.
  const std::size_t a_rows = ta ? K : M, a_cols = ta ? M : K;
  const std::size_t b_rows = tb ? N : K, b_cols = tb ? K : N;
#ifdef TAPEGRAD_ONEDNN
  // A small product (an attention head's, say) costs less through the float32 engine than the
  // conversion and call of a oneDNN primitive: the same rounded operands, summed in another order.
  // A weight already rounded in this scope (a leaf's: a parameter) goes to oneDNN whatever its
  // size: only the other operand is left to round.
  constexpr std::size_t kMinMultiplyAdds = std::size_t(1) << 20;
  const bool kept = weight_b != nullptr && weight_b->is_leaf();
  if (gemm_engine() != GemmEngine::reference && (M * N * K >= kMinMultiplyAdds || kept) &&
      matmuls().available()) {
    warn_if_emulated();
    const std::uint16_t* a = rounded.a;
    if (a == nullptr) {
      std::uint16_t* bits = scratch<std::uint16_t>(a_rows * a_cols, 0);
      compact_bf16(A, a_rows, a_cols, lda, bits);
      a = bits;
    }
    const std::uint16_t* b = rounded.b;
    if (b == nullptr && kept) {
      b = rounded_weight(*weight_b, B, b_rows, b_cols, ldb);
    } else if (b == nullptr) {
      std::uint16_t* bits = scratch<std::uint16_t>(b_rows * b_cols, 1);
      compact_bf16(B, b_rows, b_cols, ldb, bits);
      b = bits;
    }
    // The float32 engine's cut (gemm.hpp), each block one single-threaded oneDNN product: oneDNN's
    // own split of a product depends on its thread count, and with it the sums' order (a weight's
    // gradient over many tokens, on its emulated AVX-512 kernels, measured), so the bits would.
    const GemmCut cut = gemm_cut(M, N, K);
    const auto block = [&](std::size_t i) {
      const std::size_t begin = cut.begin(i), end = cut.begin(i + 1);
      if (cut.by_rows)  // rows of op(A) and of C; a row of A^T is a column of the stored A
        return matmuls().run(ta, tb, end - begin, N, K, alpha, ta ? a + begin : a + begin * K,
                             a_cols, b, b_cols, beta, C + begin * ldc, ldc);
      return matmuls().run(ta, tb, M, end - begin, K, alpha, a, a_cols,
                           tb ? b + begin * K : b + begin, b_cols, beta, C + begin, ldc);
    };
    std::atomic<bool> failed{false};
    parallel_for(cut.count, 1, [&](std::size_t first, std::size_t last) {
      for (std::size_t i = first; i < last; ++i) try {
          if (!block(i)) failed = true;
        } catch (...) {  // (a body must not throw: the calling thread reports it below)
          failed = true;
        }
    });
    check<InvariantError>(!failed, "gemm_bf16: oneDNN's bf16 product failed on ", M, "x", K, " @ ",
                          K, "x", N, ", though this CPU has them");
    return;
  }
#else
  (void)weight_b;
#endif
  float* a = scratch<float>(a_rows * a_cols, 0);
  float* b = scratch<float>(b_rows * b_cols, 1);
  if (rounded.a)
    widen_bf16(rounded.a, a_rows * a_cols, a);
  else
    compact_rounded(A, a_rows, a_cols, lda, a);
  if (rounded.b)
    widen_bf16(rounded.b, b_rows * b_cols, b);
  else
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
