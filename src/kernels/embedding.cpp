// src/kernels/embedding.cpp
//
// The embedding lookup's fast kernels, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The maths is the reference kernels'
// (src/ops/embedding.cpp), the same terms added in the same order, so the same bits; what differs
// is how it runs:
// - The dense backward sorts the positions by id once (a counting sort), then writes each row of
//   the gradient exactly once, a run of untouched rows as one block of zeros: no zero-fill pass
//   before the scatter. Threads own blocks of gradient rows, each row summed over its positions
//   in position order, so the thread count changes nothing.
// - A gather output or a dense gradient too large to stay in the caches is written with
//   non-temporal stores: a plain store to memory first reads the cache line it writes into
//   (write-allocate), 32 MiB of reads for nothing in W4's forward and 64 MiB in its backward.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "scratch.hpp"
#include "../core/parallel.hpp"
#include "../ops/dropout_mask.hpp"
#include "../ops/embedding_kernels.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#if !defined(TAPEGRAD_CAPABILITY)
#error "src/kernels/embedding.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// Gather outputs and dense gradients from this size on bypass the caches: beyond what a core can
// expect to keep of a shared last-level cache, so the lines would be evicted before anything read
// them again anyway.
constexpr std::size_t kStreamBytes = std::size_t{16} << 20;

// Whether an output of `bytes` is written with non-temporal stores. Without SSE2 (another
// architecture) there are none, and staging rows for them would only add a copy.
bool streamed([[maybe_unused]] std::size_t bytes) {
#if defined(__SSE2__)
  return bytes >= kStreamBytes;
#else
  return false;
#endif
}

// dst[0, n) = src[0, n): the whole 64-byte lines of dst with non-temporal stores (one AVX-512
// store per line, two AVX ones or four SSE ones), the unaligned ends with plain ones. Values are
// copied, never computed: the same bits on every set.
void stream_out(float* dst, const float* src, std::size_t n) {
  std::size_t j = 0;
#if defined(__SSE2__)
  for (; j < n && reinterpret_cast<std::uintptr_t>(dst + j) % 64 != 0; ++j) dst[j] = src[j];
  for (; j + 16 <= n; j += 16) {
#if defined(__AVX512F__)
    _mm512_stream_ps(dst + j, _mm512_loadu_ps(src + j));
#elif defined(__AVX__)
    for (std::size_t i = 0; i < 16; i += 8)
      _mm256_stream_ps(dst + j + i, _mm256_loadu_ps(src + j + i));
#else
    for (std::size_t i = 0; i < 16; i += 4) _mm_stream_ps(dst + j + i, _mm_loadu_ps(src + j + i));
#endif
  }
#endif
  for (; j < n; ++j) dst[j] = src[j];
}

// dst[0, n) = 0, the whole 64-byte lines with non-temporal stores as in stream_out.
void stream_zeros(float* dst, std::size_t n) {
  std::size_t j = 0;
#if defined(__SSE2__)
  for (; j < n && reinterpret_cast<std::uintptr_t>(dst + j) % 64 != 0; ++j) dst[j] = 0.0f;
  for (; j + 16 <= n; j += 16) {
#if defined(__AVX512F__)
    _mm512_stream_ps(dst + j, _mm512_setzero_ps());
#elif defined(__AVX__)
    for (std::size_t i = 0; i < 16; i += 8) _mm256_stream_ps(dst + j + i, _mm256_setzero_ps());
#else
    for (std::size_t i = 0; i < 16; i += 4) _mm_stream_ps(dst + j + i, _mm_setzero_ps());
#endif
  }
#endif
  for (; j < n; ++j) dst[j] = 0.0f;
}

// Makes the non-temporal stores of this thread visible before it reports its work done.
void end_streaming() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// The formula: embedding_forward's.
void forward(const std::int64_t* ids, std::size_t n, const float* weight, std::size_t dim,
             const float* scale, float* y) {
  const bool stream = streamed(n * dim * sizeof(float));
  detail::parallel_for(n, detail::rows_grain(dim), [&](std::size_t first, std::size_t last) {
    detail::Scratch<float> row(scale && stream ? dim : 0);
    for (std::size_t p = first; p < last; ++p) {  // one contiguous row per id
      const float* src = weight + static_cast<std::size_t>(ids[p]) * dim;
      float* dst = y + p * dim;
      if (scale) {
        const float s = *scale;
        float* out = stream ? row.data() : dst;
        for (std::size_t j = 0; j < dim; ++j) out[j] = src[j] * s;
        src = out;
      }
      if (stream)
        stream_out(dst, src, dim);
      else if (src != dst)
        std::memcpy(dst, src, dim * sizeof(float));
    }
    if (stream) end_streaming();
  });
}

// Asks for every 64-byte line of row[0, n), the last one too when the row does not start on a
// line: a row is a few kilobytes at a place the hardware prefetcher cannot guess, so the backward
// asks for the next dy row while it sums this one (in W4 about 5 % of the backward; the gather
// gained nothing from it).
[[gnu::always_inline]] inline void prefetch_row(const float* row, std::size_t n) {
  for (std::size_t j = 0; j < n; j += 16) __builtin_prefetch(row + j);
  if (n > 0) __builtin_prefetch(row + n - 1);
}

// The formula: embedding_forward_add_rows's, one pass over y: gather, scale, add the position's
// table row and, when something drops, multiply by the mask computed a chunk at a time
// (DropoutMask), where the unfused ops take three passes. The same roundings as those ops.
void forward_add_rows(const std::int64_t* ids, std::size_t n, const float* weight, std::size_t dim,
                      float c, const float* rows, std::size_t L, const EmbeddingDropout* drop,
                      float* y) {
  const ops::DropoutMask mask{drop ? drop->seed : 0, drop ? drop->call : 0, drop ? drop->p : 0.0};
  detail::parallel_for(n, detail::rows_grain(dim), [&](std::size_t first, std::size_t last) {
    const float s = c;  // a local: read through the capture, y's stores might alias it
    for (std::size_t q = first; q < last; ++q) {  // one position
      const float* wr = weight + static_cast<std::size_t>(ids[q]) * dim;
      const float* rr = rows + (q % L) * dim;
      float* yr = y + q * dim;
      if (!drop) {
        for (std::size_t j = 0; j < dim; ++j) yr[j] = wr[j] * s + rr[j];
        continue;
      }
      mask.chunks(q * dim, (q + 1) * dim, [&](std::size_t e, std::size_t len, const float* m) {
        const std::size_t j0 = e - q * dim;
        for (std::size_t j = 0; j < len; ++j) yr[j0 + j] = (wr[j0 + j] * s + rr[j0 + j]) * m[j];
      });
    }
  });
}

// The positions of each id, in position order, pad positions left out (a counting sort):
// order[first[k] .. first[k + 1]) are id k's. With by_freq, inv_count[k] = 1 / count_k.
struct Positions {
  detail::Scratch<std::size_t> first, order;
  detail::Scratch<float> inv_count;
};

Positions sort_positions(const std::int64_t* ids, std::size_t n, std::size_t num, std::int64_t pad,
                         bool by_freq) {
  Positions s;
  if (by_freq) {
    detail::Scratch<std::size_t> count(num, 0);
    for (std::size_t p = 0; p < n; ++p) ++count[static_cast<std::size_t>(ids[p])];
    s.inv_count = detail::Scratch<float>(num);
    for (std::size_t k = 0; k < num; ++k)
      s.inv_count[k] = count[k] ? static_cast<float>(1.0 / double(count[k])) : 0.0f;
  }
  s.first = detail::Scratch<std::size_t>(num + 1, 0);
  for (std::size_t p = 0; p < n; ++p)
    if (ids[p] != pad) ++s.first[static_cast<std::size_t>(ids[p]) + 1];
  for (std::size_t k = 0; k < num; ++k) s.first[k + 1] += s.first[k];
  s.order = detail::Scratch<std::size_t>(s.first[num]);
  detail::Scratch<std::size_t> next(num);  // where id k's next position goes
  for (std::size_t k = 0; k < num; ++k) next[k] = s.first[k];
  for (std::size_t p = 0; p < n; ++p)
    if (ids[p] != pad) s.order[next[static_cast<std::size_t>(ids[p])]++] = p;
  return s;
}

// What every row of the dense backward shares.
struct Scatter {
  const float* dy;
  std::size_t dim;
  const std::size_t *first, *order;
  std::size_t n_order;     // positions in order
  const float* inv_count;  // null: no scaling by frequency
  const float* scale;      // null: no scale
  const EmbeddingDropout* drop;
};

// Position p's row of dy, multiplied by the multipliers of `drop` into `masked` (rounded to
// float) when drop is not null; dy's own row otherwise.
const float* dy_row(const float* dy, std::size_t p, std::size_t dim, const EmbeddingDropout* drop,
                    float* masked) {
  const float* gp = dy + p * dim;
  if (!drop) return gp;
  const ops::DropoutMask mask{drop->seed, drop->call, drop->p};
  mask.chunks(p * dim, (p + 1) * dim, [&](std::size_t e, std::size_t len, const float* m) {
    for (std::size_t j = 0; j < len; ++j) masked[e - p * dim + j] = gp[e - p * dim + j] * m[j];
  });
  return masked;
}

// row = the sum of row k's terms: its first position's term stored as 0 + term (exactly what
// adding it to a zero-filled row gives, -0 included), then the others added in position order.
// The dy row of the next position is prefetched: those rows are scattered across dy.
void sum_row(const Scatter& s, std::size_t k, float* row, float* masked) {
  const std::size_t dim = s.dim, begin = s.first[k], end = s.first[k + 1];
  const bool plain = !s.inv_count && !s.scale;
  const float f = s.inv_count ? s.inv_count[k] : 1.0f, sc = s.scale ? *s.scale : 1.0f;
  for (std::size_t q = begin; q < end; ++q) {
    if (q + 1 < s.n_order) prefetch_row(s.dy + s.order[q + 1] * dim, dim);
    const float* gp = dy_row(s.dy, s.order[q], dim, s.drop, masked);  // dz = dy * m in dy's place
    if (q == begin) {
      if (plain)
        for (std::size_t j = 0; j < dim; ++j) row[j] = 0.0f + gp[j];
      else
        for (std::size_t j = 0; j < dim; ++j) row[j] = 0.0f + f * (gp[j] * sc);
    } else {
      if (plain)
        for (std::size_t j = 0; j < dim; ++j) row[j] += gp[j];
      else
        for (std::size_t j = 0; j < dim; ++j) row[j] += f * (gp[j] * sc);
    }
  }
}

// The formula: embedding_dense_backward's. Each thread owns the gradient rows [lo, hi) and writes
// each once: zeros for a run of rows no position holds, in one piece, else the row's sum (sum_row).
// A gradient too large for the caches (as the gather's output) is written with non-temporal stores,
// each sum made in a buffer that stays in L1 and then streamed out: plain stores made every written
// line a read first, 64 MiB of reads for nothing in W4, whose backward went from 8.4 to 5.4 ms on
// an AMD EPYC (Zen 5), W1-L's step about 4 % faster. (On a Zen 4 an earlier version of this cost
// about 10 % more CPU time than plain stores.)
void dense_backward(const std::int64_t* ids, std::size_t n, const float* dy, std::size_t num,
                    std::size_t dim, std::int64_t pad, bool by_freq, const float* scale,
                    const EmbeddingDropout* drop, float* dweight) {
  const Positions pos = sort_positions(ids, n, num, pad, by_freq);
  const std::size_t* first = pos.first.data();
  const Scatter s{
      dy,    dim, first, pos.order.data(), first[num], by_freq ? pos.inv_count.data() : nullptr,
      scale, drop};
  const bool stream = streamed(num * dim * sizeof(float));
  detail::parallel_for(num, detail::rows_grain(dim), [&](std::size_t lo, std::size_t hi) {
    detail::Scratch<float> masked(drop ? dim : 0), row(stream ? dim : 0);
    for (std::size_t k = lo; k < hi;) {
      if (first[k] == first[k + 1]) {  // a run of untouched rows: zeros, in one piece
        std::size_t end = k + 1;
        while (end < hi && first[end] == first[end + 1]) ++end;
        if (stream)
          stream_zeros(dweight + k * dim, (end - k) * dim);
        else
          std::fill_n(dweight + k * dim, (end - k) * dim, 0.0f);
        k = end;
        continue;
      }
      if (stream) {
        sum_row(s, k, row.data(), masked.data());
        stream_out(dweight + k * dim, row.data(), dim);
      } else {
        sum_row(s, k, dweight + k * dim, masked.data());
      }
      ++k;
    }
    if (stream) end_streaming();
  });
}

// The formula: embedding_sparse_values's. Rows split over the threads, each position's dy row
// masked a chunk at a time into a buffer when something drops.
void sparse_values(const std::size_t* from, std::size_t kept, const float* dy, std::size_t dim,
                   const float* scale, const EmbeddingDropout* drop, float* values) {
  detail::parallel_for(kept, detail::rows_grain(dim), [&](std::size_t first, std::size_t last) {
    detail::Scratch<float> masked(drop ? dim : 0);
    for (std::size_t r = first; r < last; ++r) {
      const float* gp = dy_row(dy, from[r], dim, drop, masked.data());
      float* out = values + r * dim;
      if (scale) {
        const float s = *scale;
        for (std::size_t j = 0; j < dim; ++j) out[j] = gp[j] * s;
      } else {
        std::memcpy(out, gp, dim * sizeof(float));
      }
    }
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::embedding_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::embedding_forward_add_rows, forward_add_rows);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::embedding_dense_backward, dense_backward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::embedding_sparse_values, sparse_values);
