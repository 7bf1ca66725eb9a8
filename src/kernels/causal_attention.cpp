// src/kernels/causal_attention.cpp
//
// Causal self-attention's fast kernels, compiled once per kernel set (namespace
// tapegrad::kernels::<set>, docs/kernels.md). The maths is the reference kernels'
// (src/ops/causal_attention.cpp); what differs is how it runs:
// - The products are small loops rather than sgemm calls: a head's blocks are tiny (64 x 32 in the
//   baby GPT, where sgemm spends more time starting than multiplying), and the mask is in their
//   loop bounds, so the half of every product above the diagonal is never computed. They run by
//   register tiles of kR rows and up to two vectors of columns, each element summed over k
//   ascending. In a tile on the diagonal, a row adds only the terms the causal mask allows, as the
//   reference's loops do: a zero weight times a NaN or infinite value of a later position would
//   otherwise be NaN (0 * inf), and bring it to an earlier one.
// - The scale, the causal mask and the softmax are one pass over each row of scores, with
//   exp_f32 (vectorised) and row sums in four interleaved double lanes.
// - Threads: the (b, h) pairs are independent and split over tapegrad's pool; each pair is
//   computed by one thread in the same way whatever the thread count, so results never depend on
//   it. In backward, the query heads that share a key/value head (grouped-query attention) add
//   into its gradient: they run on one thread, in order, the first writing the gradient and each
//   next one adding its part from scratch, so the sum's order is fixed too.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "exp_f32.hpp"
#include "scratch.hpp"
#include "../core/parallel.hpp"
#include "../ops/causal_attention_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error \
    "src/kernels/causal_attention.cpp is compiled once per kernel set, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {
struct Dims {
  std::size_t B, T, H, KV, hs;
  std::size_t C() const { return H * hs; }               // the row length of y
  std::size_t ld() const { return (H + 2 * KV) * hs; }   // the row length of qkv
  std::size_t block() const { return T * T; }            // one head's scores
  std::size_t group() const { return H / KV; }           // query heads per key/value head
  // Where query head h's keys and values start in a row of qkv: its group's key/value head.
  std::size_t key_column(std::size_t h) const { return (H + h / group()) * hs; }
  std::size_t value_column(std::size_t h) const { return (H + KV + h / group()) * hs; }
};

// The weights of every head: the softmax P (zeros above the diagonal) and, with dropout (keep
// not null), the keep mask and the weights applied to V; the bias on the scores (H, T, T), or null.
struct Heads {
  const float* bias;
  const float* p;
  const std::uint8_t* keep;
  float drop_scale;
  const float* p_used;
  float scale;  // 1 / sqrt(hs)
  const float* weights() const { return keep ? p_used : p; }
};

// ---- vectors ------------------------------------------------------------------------------------
// kLanes floats as one value, GCC's and Clang's vector extension: one AVX-512 register in the
// avx512 set; elsewhere eight floats, an AVX register, or two SSE ones on a CPU without AVX. VecU
// is the same type for unaligned memory that may alias floats.
#if defined(__AVX512F__)
constexpr std::size_t kLanes = 16;
#else
constexpr std::size_t kLanes = 8;
#endif
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));
using VecU = float __attribute__((vector_size(kLanes * sizeof(float)), aligned(4), may_alias));
// Always inlined, so no call ever passes a vector wider than the set's registers (the baseline
// set's eight floats are two SSE registers); GCC's -Wpsabi note about such calls is off in this
// file (GCC gives it at the end of the file, for the templates it instantiates there).
#pragma GCC diagnostic ignored "-Wpsabi"
[[gnu::always_inline]] inline Vec load(const float* p) { return *reinterpret_cast<const VecU*>(p); }
[[gnu::always_inline]] inline void store(float* p, Vec v) { *reinterpret_cast<VecU*>(p) = v; }
template <std::size_t... Lane>
[[gnu::always_inline]] inline Vec splat(float x, std::index_sequence<Lane...>) {
  return Vec{((void)Lane, x)...};
}
[[gnu::always_inline]] inline Vec splat(float x) {  // x in every lane: one broadcast instruction
  return splat(x, std::make_index_sequence<kLanes>{});
}

// Row sums (and the backward's row dot products) in four interleaved double lanes (j % 4), added
// at the end: a fixed order (so results depend on the length only) that the compiler vectorises,
// where one running sum waits four cycles for every element. A maximum is exact in any order.
double lane_sum(const float* x, std::size_t n) {
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (std::size_t l = 0; l < 4; ++l) lane[l] += x[j + l];
  for (; j < n; ++j) lane[j % 4] += x[j];
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}
double lane_dot(const float* x, const float* y, std::size_t n) {
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (std::size_t l = 0; l < 4; ++l) lane[l] += double(x[j + l]) * double(y[j + l]);
  for (; j < n; ++j) lane[j % 4] += double(x[j]) * double(y[j]);
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}
// The largest of x[0 .. n), n >= 1: kept in one vector of lanes, then across them (a maximum is
// exact in any order; a NaN makes the softmax's whole row NaN whichever maximum it gives).
float row_max(const float* x, std::size_t n) {
  std::size_t j = 0;
  float m = x[0];
  if (n >= kLanes) {
    Vec lanes = load(x);
    for (j = kLanes; j + kLanes <= n; j += kLanes) {
      const Vec v = load(x + j);
      lanes = v > lanes ? v : lanes;
    }
    for (std::size_t l = 0; l < kLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  }
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// Row i of the (T, T) block S holds q_i . k_j for j <= i; it becomes softmax over j <= i, then 0:
//   s_j = S[i, j] * scale;  m = max_j s_j;  e_j = exp(s_j - m);
//   P[i, j] = e_j * (1 / sum_j e_j)   (sum in double)
// The loops run over n8 = i + 1 rounded up to 8 (at most T): the scores between i + 1 and n8 are
// set to -inf, so their exponentials are 0 and change neither the maximum nor the sum, and the
// loops run by whole vectors of eight (with AVX-512's sixteen, the last eight go one at a time).
// The maximum is taken before the scaling: scale > 0 and rounding is monotone, so
// max_j (S[i, j] * scale) equals (max_j S[i, j]) * scale (at most the sign of a zero maximum
// differs, which no s_j - m can tell), and the row is read once less.
// With a bias (bias: the head's (T, T) block, or null), s_j = S[i, j] * scale + bias[i, j] is
// written first and the maximum taken over it: a bias does not keep the order of the scores.
void causal_softmax_rows(float* S, std::size_t T, float scale, const float* bias) {
  for (std::size_t i = 0; i < T; ++i) {
    float* row = S + i * T;
    const std::size_t n = i + 1, n8 = std::min(T, (n + 7) / 8 * 8);  // the mask: only keys 0 .. i
    if (bias)
      for (std::size_t j = 0; j < n; ++j) row[j] = row[j] * scale + bias[i * T + j];
    std::fill(row + n, row + n8, -std::numeric_limits<float>::infinity());
    if (bias) {
      const float m = row_max(row, n8);
      for (std::size_t j = 0; j < n8; ++j) row[j] = ::tapegrad::detail::exp_f32(row[j] - m);
    } else {
      const float m = row_max(row, n8) * scale;
      for (std::size_t j = 0; j < n8; ++j)
        row[j] = ::tapegrad::detail::exp_f32(row[j] * scale - m);  // vectorised
    }
    const float inverse =
        1.0f / static_cast<float>(lane_sum(row, n8));  // times 1/sum, as PyTorch's kernel
    for (std::size_t j = 0; j < n8; ++j) row[j] = row[j] * inverse;
    // 0 above the diagonal, also where the padding's exp(-inf - m) was NaN (m NaN or -inf)
    std::fill(row + n, row + T, 0.0f);
  }
}

// P' = P * m on n weights from `at` (dropout on the weights; in place when in == out).
void apply_keep_mask(const Heads& s, std::size_t at, std::size_t n, const float* in, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * (s.keep[at + i] ? s.drop_scale : 0.0f);
}

// ---- one head's products ------------------------------------------------------------------------
// Every product of a head is C = A B on blocks of (T, T) or (T, hs), computed by tiles of kR rows
// and up to kW columns whose sums stay in registers while k runs.
// A(r, k) = A[r * ar + k * ak] reads the left operand with any strides, so P^T and dS^T are read
// in place; the right operand B has contiguous rows (keys and values are transposed into scratch
// where a product needs them by column). Each element of C is summed over k ascending in one tile,
// so the result depends on the sizes only, never on the tile width, the vector width or the thread
// that computes it: every kernel set gives the same bits.
// The tiles are kR = 6 rows of two vectors: 12 vector sums, most of the 16 AVX registers (of 32
// with AVX-512, whose vectors are twice as wide, so a tile covers twice the columns; without AVX
// an eight-float vector is two SSE registers, and some sums wait in memory).
constexpr std::size_t kR = 6, kW = 2 * kLanes;

// Which terms of a tile's sums count where k meets the tile's rows (k = d + r for its row r,
// d = its first row): all (the scores, whose entries above the diagonal the softmax overwrites), or
// the causal mask's: k <= d + r (row i of P' V and dS K adds j <= i) or k >= d + r (row j of
// P'^T dO and dS^T Q adds i >= j). Skipping a term whose weight is 0 changes no finite sum.
enum class Mask { none, lower, upper };
struct Diagonal {
  Mask mask;
  std::size_t d;  // the k of the tile's first row
  // Whether row r adds the term of k.
  bool counts(std::size_t r, std::size_t k) const {
    return mask == Mask::none || (mask == Mask::lower ? k <= d + r : k >= d + r);
  }
};

// Whether the (rows, w) block X (leading dimension ld) holds only finite values: the largest
// exponent field is all ones for an infinity or a NaN (an integer maximum, which vectorises). A
// causal product whose right operand is finite may add the zero weights past the diagonal (each
// term 0 * b is a zero) and run without the mask's test; one holding a NaN or an infinity must not.
bool all_finite(const float* X, std::size_t ld, std::size_t rows, std::size_t w) {
  constexpr std::uint32_t kExponent = 0x7f800000u;
  std::uint32_t largest = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < w; ++c)
      largest = std::max(largest, std::bit_cast<std::uint32_t>(X[r * ld + c]) & kExponent);
  return largest != kExponent;
}
// The mask a causal product needs: `mask` where its right operand B holds a special value.
Mask needed(Mask mask, const float* B, std::size_t ld, std::size_t rows, std::size_t w) {
  return all_finite(B, ld, rows, w) ? Mask::none : mask;
}

// C[r, c] = sum_{k0 <= k < k1} A(r, k) * B[k, c] for R rows (R <= kR) and NV vectors of columns:
// the R x NV sums live in registers while k runs. Masked: without the terms `diagonal` leaves out
// (only for a right operand holding a special value, where speed matters less than the rule).
template <std::size_t R, std::size_t NV, bool Masked>
void vector_tile(const float* A, std::size_t ar, std::size_t ak, const float* B, std::size_t ldb,
                 std::size_t k0, std::size_t k1, float* C, std::size_t ldc, Diagonal diagonal) {
  static_assert(R <= kR && NV * kLanes <= kW, "a tile of at most kR rows and kW columns");
  Vec acc[R][NV];
  for (std::size_t r = 0; r < R; ++r)  // in registers from the start (= {} is a memset)
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = splat(0.0f);
  for (std::size_t k = k0; k < k1; ++k) {
    Vec b[NV];
    for (std::size_t v = 0; v < NV; ++v) b[v] = load(B + k * ldb + v * kLanes);
    for (std::size_t r = 0; r < R; ++r) {
      if constexpr (Masked)
        if (!diagonal.counts(r, k)) continue;
      const Vec a = splat(A[r * ar + k * ak]);
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] += a * b[v];
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < NV; ++v) store(C + r * ldc + v * kLanes, acc[r][v]);
}

// The same for a tile narrower than one vector (rows <= kR), one float at a time.
void edge_tile(const float* A, std::size_t ar, std::size_t ak, const float* B, std::size_t ldb,
               std::size_t k0, std::size_t k1, float* C, std::size_t ldc, std::size_t rows,
               std::size_t cols, Diagonal diagonal) {
  float acc[kR][kLanes] = {};
  for (std::size_t k = k0; k < k1; ++k)
    for (std::size_t r = 0; r < rows; ++r) {
      if (!diagonal.counts(r, k)) continue;
      const float a = A[r * ar + k * ak];
      for (std::size_t c = 0; c < cols; ++c) acc[r][c] += a * B[k * ldb + c];
    }
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) C[r * ldc + c] = acc[r][c];
}

// One tile of `rows` rows (<= kR) and NV vectors of columns.
template <std::size_t NV, bool Masked>
void tile_of_rows(std::size_t rows, const float* A, std::size_t ar, std::size_t ak, const float* B,
                  std::size_t ldb, std::size_t k0, std::size_t k1, float* C, std::size_t ldc,
                  Diagonal diagonal) {
  switch (rows) {  // a tile of kR rows, or the last, shorter one
    case 6: vector_tile<6, NV, Masked>(A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal); break;
    case 5: vector_tile<5, NV, Masked>(A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal); break;
    case 4: vector_tile<4, NV, Masked>(A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal); break;
    case 3: vector_tile<3, NV, Masked>(A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal); break;
    case 2: vector_tile<2, NV, Masked>(A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal); break;
    default: vector_tile<1, NV, Masked>(A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal); break;
  }
}
// The same, the mask's test compiled in only where the product needs it.
template <std::size_t NV>
void tile_of_rows(std::size_t rows, const float* A, std::size_t ar, std::size_t ak, const float* B,
                  std::size_t ldb, std::size_t k0, std::size_t k1, float* C, std::size_t ldc,
                  Diagonal diagonal) {
  if (diagonal.mask != Mask::none) {
    tile_of_rows<NV, true>(rows, A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal);
    return;
  }
  tile_of_rows<NV, false>(rows, A, ar, ak, B, ldb, k0, k1, C, ldc, diagonal);
}

// C = A B for rows [0, M), columns [0, cols(r0)) and k in [k0(r0), k1(r0)) for the tile of rows
// starting at r0: how the causal mask narrows each product; `mask` then drops the terms past the
// diagonal inside the tile's rows (Diagonal), which a product whose right operand is finite need
// not do (needed()). Columns go by two vectors, then one, then one float at a time.
template <class Cols, class KBegin, class KEnd>
void product(std::size_t M, const float* A, std::size_t ar, std::size_t ak, const float* B,
             std::size_t ldb, float* C, std::size_t ldc, Cols cols, KBegin k0, KEnd k1,
             Mask mask) {
  for (std::size_t r0 = 0; r0 < M; r0 += kR) {
    const std::size_t rows = std::min(kR, M - r0), N = cols(r0), kb = k0(r0), ke = k1(r0);
    const Diagonal diagonal{mask, r0};
    const float* a = A + r0 * ar;
    float* c = C + r0 * ldc;
    std::size_t c0 = 0;
    for (; c0 + kW <= N; c0 += kW)
      tile_of_rows<2>(rows, a, ar, ak, B + c0, ldb, kb, ke, c + c0, ldc, diagonal);
    for (; c0 + kLanes <= N; c0 += kLanes)
      tile_of_rows<1>(rows, a, ar, ak, B + c0, ldb, kb, ke, c + c0, ldc, diagonal);
    if (c0 < N) edge_tile(a, ar, ak, B + c0, ldb, kb, ke, c + c0, ldc, rows, N - c0, diagonal);
  }
}

// Xt (w, T) = X^T for the (T, w) block X with leading dimension ld: with AVX, by blocks of 8 x 8,
// each loaded as eight rows and turned in registers by three rounds of shuffles (as AVX's unpack
// instructions do in _MM_TRANSPOSE8), then one float at a time at the edges; without AVX (where
// the shuffles become single-float moves anyway) or __builtin_shufflevector (GCC before 12), one
// float at a time throughout. Only moves floats: the same result either way.
#if defined(__AVX__) && defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define TAPEGRAD_TRANSPOSE_BY_BLOCKS 1
#endif
#endif
#if defined(TAPEGRAD_TRANSPOSE_BY_BLOCKS)
using Vec8 = float __attribute__((vector_size(32)));  // Vec itself, except with AVX-512
using Vec8U = float __attribute__((vector_size(32), aligned(4), may_alias));
void transpose_8x8(const float* X, std::size_t ld, float* Xt, std::size_t ldt) {
  Vec8 r[8], t[8], u[8];
  for (std::size_t i = 0; i < 8; ++i) r[i] = *reinterpret_cast<const Vec8U*>(X + i * ld);
  for (std::size_t i = 0; i < 8; i += 2) {  // pairs of rows, interleaved
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (std::size_t i = 0; i < 8; i += 4)  // then pairs of pairs
    for (std::size_t j = 0; j < 2; ++j) {
      u[i + 2 * j] = __builtin_shufflevector(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2 * j + 1] =
          __builtin_shufflevector(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (std::size_t c = 0; c < 4; ++c) {  // then halves: columns c and c + 4 of X
    *reinterpret_cast<Vec8U*>(Xt + c * ldt) =
        __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    *reinterpret_cast<Vec8U*>(Xt + (c + 4) * ldt) =
        __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

#endif

void transpose_into(const float* X, std::size_t ld, std::size_t T, std::size_t w, float* Xt) {
  std::size_t T8 = 0, w8 = 0;  // the rows and columns done by blocks
#if defined(TAPEGRAD_TRANSPOSE_BY_BLOCKS)
  T8 = T / 8 * 8;
  w8 = w / 8 * 8;
  for (std::size_t t = 0; t < T8; t += 8)
    for (std::size_t c = 0; c < w8; c += 8) transpose_8x8(X + t * ld + c, ld, Xt + c * T + t, T);
#endif
  for (std::size_t t = 0; t < T; ++t)  // the edges: columns beyond w8, rows beyond T8
    for (std::size_t c = t < T8 ? w8 : 0; c < w; ++c) Xt[c * T + t] = X[t * ld + c];
}

// Forward of one (batch b, head h) pair, for rows i = 0 .. T-1 (Kt: scratch, (hs, T)); p and
// p_used: where s.p and s.p_used are, writable:
//   S[i, j] = (q_i . k_j) * scale    for j <= i    the mask: the loops stop at the diagonal's tile
//   P = causal softmax(S)            by rows, zeros above the diagonal
//   P' = P * m                       dropout (only with p > 0)
//   o_i = sum_{j <= i} P'[i, j] v_j  written into y's columns h*hs ..
void forward_pair(const float* qkv, float* y, float* Kt, float* p, float* p_used, const Heads& s,
                  const Dims& d, std::size_t b, std::size_t h) {
  const std::size_t C = d.C(), ld = d.ld(), T = d.T, at = (b * d.H + h) * d.block();
  const float* Q = qkv + b * T * ld + h * d.hs;
  const float* K = qkv + b * T * ld + d.key_column(h);
  const float* V = qkv + b * T * ld + d.value_column(h);
  float* P = p + at;
  const std::size_t hs = d.hs;
  auto all = [](std::size_t n) { return [n](std::size_t) { return n; }; };
  auto up_to_tile = [T](std::size_t r0) {
    return std::min(T, r0 + kR);
  };  // keys j <= the tile's last row
  // Score columns up to the tile's last row, rounded up to whole vectors (the few beyond the
  // diagonal are cheaper computed than left out; the softmax overwrites them with zeros).
  auto causal_cols = [T](std::size_t r0) {
    return std::min(T, (r0 + kR + kLanes - 1) / kLanes * kLanes);
  };
  transpose_into(K, ld, T, hs, Kt);
  product(T, Q, ld, 1, Kt, T, P, T, causal_cols, all(0), all(hs),
          Mask::none);  // S = Q K^T, for j <= i (and a few beyond, which the softmax overwrites)
  causal_softmax_rows(P, T, s.scale, s.bias ? s.bias + h * d.block() : nullptr);
  const float* W = P;
  if (s.keep) {
    apply_keep_mask(s, at, d.block(), P, p_used + at);
    W = p_used + at;
  }
  product(T, W, T, 1, V, ld, y + b * T * C + h * hs, C, all(hs), all(0), up_to_tile,
          needed(Mask::lower, V, ld, T, hs));  // O = P' V over j <= i
}

// Backward of one pair, restating each forward line before its adjoint (vt, ds: scratch):
//   o_i = sum_j P'[i, j] v_j     dv_j = sum_{i >= j} P'[i, j] do_i      dP'[i, j] = do_i . v_j
//   P' = P * m                   dP = dP' * m
//   P = softmax(S)               dS = P * (dP - rowsum(dP * P))         (j <= i; 0 above)
//   S = (q_i . k_j) * scale      dS = dS * scale;  dq_i = sum_j dS[i, j] k_j;
//                                dk_j = sum_{i >= j} dS[i, j] q_i
// dK and dV are written at dk, dv with leading dimension ldkv: into dqkv for the first query head
// of a key/value head, into scratch for the others (backward() adds them).
void backward_pair(const float* dy, const float* qkv, float* dqkv, float* vt, float* dS, float* dk,
                   float* dv, std::size_t ldkv, const Heads& s, const Dims& d, std::size_t b,
                   std::size_t h) {
  const std::size_t C = d.C(), ld = d.ld(), T = d.T, hs = d.hs, at = (b * d.H + h) * d.block();
  const std::size_t row0 = b * T * ld;
  const float *Q = qkv + row0 + h * hs, *K = qkv + row0 + d.key_column(h),
              *V = qkv + row0 + d.value_column(h);
  float *dQ = dqkv + row0 + h * hs, *dK = dk, *dV = dv;
  const float* dO = dy + b * T * C + h * hs;
  const float *P = s.p + at, *W = s.weights() + at;
  auto all = [](std::size_t n) { return [n](std::size_t) { return n; }; };
  auto up_to_tile = [T](std::size_t r0) { return std::min(T, r0 + kR); };
  auto causal_cols = [T](std::size_t r0) {
    return std::min(T, (r0 + kR + kLanes - 1) / kLanes * kLanes);
  };
  auto from_tile = [](std::size_t r0) { return r0; };              // rows i >= the tile's first j
  product(T, W, 1, T, dO, C, dV, ldkv, all(hs), from_tile, all(T),
          needed(Mask::upper, dO, C, T, hs));  // dV = P'^T dO over i >= j
  transpose_into(V, ld, T, hs, vt);
  product(T, dO, C, 1, vt, T, dS, T, causal_cols, all(0), all(hs),
          Mask::none);  // dP' = dO V^T, for j <= i (and a few beyond, zeroed below)
  if (s.keep) apply_keep_mask(s, at, d.block(), dS, dS);
  for (std::size_t i = 0; i < T; ++i) {  // over n8 as in the softmax:
    float* g = dS + i * T;               // P is 0 beyond the diagonal
    const float* p = P + i * T;
    const std::size_t n = i + 1, n8 = std::min(T, (i + 8) / 8 * 8);
    std::fill(g + n, g + n8, 0.0f);  // dP' beyond the diagonal, NaN for a NaN value there
    const auto c = static_cast<float>(lane_dot(g, p, n8));
    for (std::size_t j = 0; j < n8; ++j) g[j] = (p[j] * (g[j] - c)) * s.scale;
    std::fill(g + n, g + T, 0.0f);  // the products below read it (0 * c is NaN for a NaN c)
  }
  product(T, dS, T, 1, K, ld, dQ, ld, all(hs), all(0), up_to_tile,
          needed(Mask::lower, K, ld, T, hs));  // dQ = dS K over j <= i
  product(T, dS, 1, T, Q, ld, dK, ldkv, all(hs), from_tile, all(T),
          needed(Mask::upper, Q, ld, T, hs));  // dK = dS^T Q over i >= j
}

// The formula: causal_attention_forward's.
void forward(const float* qkv, const float* bias, float* y, float* p, const std::uint8_t* keep,
             float drop_scale, float* p_used, std::size_t B, std::size_t T, std::size_t H,
             std::size_t KV, std::size_t hs, float scale) {
  const Dims d{B, T, H, KV, hs};
  const Heads s{bias, p, keep, drop_scale, p_used, scale};
  ::tapegrad::detail::parallel_for(d.B * d.H, 1, [&](std::size_t first, std::size_t last) {
    detail::Scratch<float> kt(d.hs * d.T);
    for (std::size_t pair = first; pair < last; ++pair)
      forward_pair(qkv, y, kt.data(), p, p_used, s, d, pair / d.H, pair % d.H);
  });
}

// The formula: causal_attention_backward's. One task per (batch, key/value head): its query heads
// in order, the first writing dK and dV in place, each next one into scratch, then added.
void backward(const float* dy, const float* qkv, const float* p, const std::uint8_t* keep,
              float drop_scale, const float* p_used, float* dqkv, std::size_t B, std::size_t T,
              std::size_t H, std::size_t KV, std::size_t hs, float scale) {
  const Dims d{B, T, H, KV, hs};
  const Heads s{nullptr, p, keep, drop_scale, p_used, scale};
  const std::size_t ld = d.ld(), G = d.group();
  ::tapegrad::detail::parallel_for(d.B * d.KV, 1, [&](std::size_t first, std::size_t last) {
    detail::Scratch<float> vt(d.hs * d.T), dS(d.block());
    detail::Scratch<float> dk(G > 1 ? d.T * d.hs : 0), dv(G > 1 ? d.T * d.hs : 0);
    for (std::size_t task = first; task < last; ++task) {
      const std::size_t b = task / d.KV, g = task % d.KV;
      float* dK = dqkv + b * d.T * ld + (d.H + g) * d.hs;
      float* dV = dqkv + b * d.T * ld + (d.H + d.KV + g) * d.hs;
      backward_pair(dy, qkv, dqkv, vt.data(), dS.data(), dK, dV, ld, s, d, b, g * G);
      for (std::size_t h = g * G + 1; h < (g + 1) * G; ++h) {
        backward_pair(dy, qkv, dqkv, vt.data(), dS.data(), dk.data(), dv.data(), d.hs, s, d, b,
                      h);
        for (std::size_t t = 0; t < d.T; ++t)
          for (std::size_t c = 0; c < d.hs; ++c) {
            dK[t * ld + c] += dk.data()[t * d.hs + c];
            dV[t * ld + c] += dv.data()[t * d.hs + c];
          }
      }
    }
  });
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::causal_attention_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::causal_attention_backward, backward);
