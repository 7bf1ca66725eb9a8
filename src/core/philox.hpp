// src/core/philox.hpp (private)
//
// The dropout mask's random numbers: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC'11; the generator of Random123, of PyTorch's CUDA backend and of
// JAX's ancestors). A counter-based generator is a keyed hash: block q of the stream of (seed,
// call) is philox(key = seed, counter = (q, call)), four 32-bit words that depend on nothing else.
// So element e of a mask can be computed by any thread, in any order, at any time: forward and
// backward compute the same mask independently, nothing is stored, and the thread count cannot
// change a result. The sequential mt19937_64 stream (random.hpp) stays for initialisation and data.
//
// One round, on the counter (x0, x1, x2, x3) and key (k0, k1):
//     hi0:lo0 = 0xD2511F53 * x0        hi1:lo1 = 0xCD9E8D57 * x2        (32 x 32 -> 64 bits)
//     (x0, x1, x2, x3) = (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0)
// then the key is bumped by the golden-ratio constants (k0 += 0x9E3779B9, k1 += 0xBB67AE85);
// ten rounds. tests/core/test_philox.cpp checks this against Random123's known-answer vectors.
//
// The dropout mask (ops/dropout.hpp): element e of call c of a layer seeded s takes word e % 4 of block
// q = e / 4, x, with key (s low, s high) and counter (q low, q high, c low, c high), and
// u = (x >> 8) * 2^-24; it is kept iff u >= p, i.e. iff x >> 8 >= ceil(p * 2^24).
//
// Speed: philox_blocks computes 16 blocks (64 mask elements) at a time: with AVX2, 8 blocks per
// instruction (vpmuludq gives 4 of the 32 x 32 -> 64-bit products, so two of them per word);
// elsewhere the plain C++ of philox_blocks_portable. GCC does not vectorise that form well (the
// 64-bit products become unpacks and spills: 2.2 ns per element against 0.4 with intrinsics).
// Integer arithmetic only: both forms give the same bits (tests/core/test_philox.cpp checks it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "set_namespace.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tapegrad::detail {
inline namespace TAPEGRAD_SET_NAMESPACE {  // one copy per kernel set: kernels/set_namespace.hpp

inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

/// One Philox4x32-10 block: ctr and key in, the four output words in out. The reference form.
inline void philox4x32_10(const std::uint32_t ctr[4], const std::uint32_t key[2],
                          std::uint32_t out[4]) {
  std::uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    const std::uint64_t p0 = std::uint64_t{kPhiloxM0} * x0, p1 = std::uint64_t{kPhiloxM1} * x2;
    const auto hi0 = std::uint32_t(p0 >> 32), lo0 = std::uint32_t(p0);
    const auto hi1 = std::uint32_t(p1 >> 32), lo1 = std::uint32_t(p1);
    x0 = hi1 ^ x1 ^ k0;
    x1 = lo1;
    x2 = hi0 ^ x3 ^ k1;
    x3 = lo0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

/// Blocks per group in philox_blocks_portable (and the unit of philox_blocks' count).
inline constexpr std::size_t kPhiloxLanes = 16;

/// philox_blocks in plain C++ (any CPU): the kPhiloxLanes consecutive blocks q0, q0 + 1, ... of
/// the stream (seed, call), in element order: words[4 * b + j] is word j of block q0 + b.
inline void philox_blocks_portable(std::uint64_t seed, std::uint64_t call, std::uint64_t q0,
                                   std::uint32_t* words) {
  for (std::size_t b = 0; b < kPhiloxLanes; ++b) {
    const std::uint64_t q = q0 + b;
    const std::uint32_t ctr[4] = {std::uint32_t(q), std::uint32_t(q >> 32), std::uint32_t(call),
                                  std::uint32_t(call >> 32)};
    const std::uint32_t key[2] = {std::uint32_t(seed), std::uint32_t(seed >> 32)};
    philox4x32_10(ctr, key, words + 4 * b);
  }
}

#if defined(__AVX2__)
namespace philox_avx2 {
// Four blocks per vector, each 32-bit word in the low half of a 64-bit lane: vpmuludq multiplies
// those low halves into full 64-bit products, so lo is the product itself (the next round's
// vpmuludq ignores its high half, and so do the XORs' results that matter) and hi is one shift.
// The high halves carry garbage until store() packs the low halves into element order.
struct Block4 {
  __m256i x0, x1, x2, x3;
};

inline void round(Block4& s, __m256i k0, __m256i k1) {
  const __m256i m0 = _mm256_set1_epi64x(kPhiloxM0), m1 = _mm256_set1_epi64x(kPhiloxM1);
  const __m256i p0 = _mm256_mul_epu32(s.x0, m0), p1 = _mm256_mul_epu32(s.x2, m1);
  s.x0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), s.x1), k0);
  s.x1 = p1;
  s.x2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), s.x3), k1);
  s.x3 = p0;
}

// The low halves of 4 blocks as 16 words in element order, in two vectors: blocks 0 and 1 in
// `first`, blocks 2 and 3 in `second`.
inline void pack(const Block4& s, __m256i& first, __m256i& second) {
  const __m256i w01 = _mm256_blend_epi32(s.x0, _mm256_slli_epi64(s.x1, 32),
                                         0xAA);  // b0w0 b0w1 b1w0 b1w1 | b2.. b3..
  const __m256i w23 = _mm256_blend_epi32(s.x2, _mm256_slli_epi64(s.x3, 32), 0xAA);
  const __m256i lo = _mm256_unpacklo_epi64(w01, w23),
                hi = _mm256_unpackhi_epi64(w01, w23);  // b0 | b2, b1 | b3
  first = _mm256_permute2x128_si256(lo, hi, 0x20);
  second = _mm256_permute2x128_si256(lo, hi, 0x31);
}

// Ten rounds on `count` blocks from q0 (a multiple of 8), 8 at a time; store(v, e) receives the
// words of elements [e, e + 8) relative to block q0, in element order, 4 vectors per 8 blocks.
template <class Store>
void generate(std::uint64_t seed, std::uint64_t call, std::uint64_t q0, std::size_t count,
              Store&& store) {
  __m256i k0[10], k1[10];  // the round keys, bumped once per round
  std::uint32_t a = std::uint32_t(seed), b = std::uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r, a += kPhiloxW0, b += kPhiloxW1) {
    k0[r] = _mm256_set1_epi64x(a);
    k1[r] = _mm256_set1_epi64x(b);
  }
  const __m256i c_lo = _mm256_set1_epi64x(std::uint32_t(call)),
                c_hi = _mm256_set1_epi64x(std::uint32_t(call >> 32));
  // q + i for the 8 blocks of a group, as 64-bit lanes: the low half is the counter's word 0 (the
  // high half is ignored, like all garbage above), the high half shifted down is word 1.
  __m256i q_s = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(q0)),
                                 _mm256_setr_epi64x(0, 1, 2, 3));
  __m256i q_t = _mm256_add_epi64(q_s, _mm256_set1_epi64x(4));
  const __m256i eight = _mm256_set1_epi64x(8);
  for (std::size_t g = 0; g < count; g += 8) {
    Block4 s{q_s, _mm256_srli_epi64(q_s, 32), c_lo, c_hi};
    Block4 t{q_t, _mm256_srli_epi64(q_t, 32), c_lo, c_hi};
    q_s = _mm256_add_epi64(q_s, eight);
    q_t = _mm256_add_epi64(q_t, eight);
    for (int r = 0; r < 10; ++r) {  // two independent chains keep the multipliers busy
      round(s, k0[r], k1[r]);
      round(t, k0[r], k1[r]);
    }
    __m256i v0, v1, v2, v3;
    pack(s, v0, v1);
    pack(t, v2, v3);
    store(v0, 4 * g);
    store(v1, 4 * g + 8);
    store(v2, 4 * g + 16);
    store(v3, 4 * g + 24);
  }
}
}  // namespace philox_avx2
#endif

/// philox_blocks_portable for `count` blocks (a multiple of kPhiloxLanes), bit for bit; with
/// AVX2, 8 blocks at a time in two vectors per word.
inline void philox_blocks(std::uint64_t seed, std::uint64_t call, std::uint64_t q0,
                          std::size_t count, std::uint32_t* words) {
#if defined(__AVX2__)
  philox_avx2::generate(seed, call, q0, count, [words](__m256i v, std::size_t e) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + e), v);
  });
#else
  for (std::size_t g = 0; g < count; g += kPhiloxLanes)
    philox_blocks_portable(seed, call, q0 + g, words + 4 * g);
#endif
}

/// keep iff (x >> 8) >= keep_threshold(p):  u = (x >> 8) 2^-24 >= p  <=>  x >> 8 >= p 2^24 (exact:
/// a power-of-two scale)  <=>  x >> 8 >= ceil(p 2^24). p = 1 gives 2^24, which nothing reaches.
inline std::uint32_t keep_threshold(double p) {
  return static_cast<std::uint32_t>(std::ceil(p * 0x1.0p24));
}

/// Elements handled per call of mask_chunk: 64 blocks, 256 floats (1 KiB) of multipliers, small
/// enough to stay in L1 between computing them and applying them.
inline constexpr std::size_t kMaskChunk = 4 * 4 * kPhiloxLanes;

/// The multipliers of elements [first, first + n), n <= kMaskChunk, of the mask of (seed, call):
/// keep(e) ? scale : 0. Computed whole blocks at a time into `buffer` (kMaskBuffer floats);
/// returns where element `first`'s multiplier is in it. `first` need not be a multiple of 4.
inline constexpr std::size_t kMaskBuffer = kMaskChunk + 4 * kPhiloxLanes;
inline const float* mask_chunk(std::uint64_t seed, std::uint64_t call, std::uint32_t threshold,
                               float scale, std::size_t first, std::size_t n, float* buffer) {
  const std::uint64_t q0 = first / 4;
  const std::size_t skip = first % 4;
  const std::size_t count = ((skip + n + 3) / 4 + kPhiloxLanes - 1) / kPhiloxLanes * kPhiloxLanes;
#if defined(__AVX2__)
  const __m256i below = _mm256_set1_epi32(int(threshold) - 1);
  const __m256i s = _mm256_castps_si256(_mm256_set1_ps(scale));
  philox_avx2::generate(seed, call, q0, count, [&](__m256i v, std::size_t e) {
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_srli_epi32(v, 8), below);  // x >> 8 >= threshold
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(buffer + e), _mm256_and_si256(keep, s));
  });
#else
  std::uint32_t words[kMaskBuffer];
  philox_blocks(seed, call, q0, count, words);
  for (std::size_t i = 0; i < 4 * count; ++i)
    buffer[i] = (words[i] >> 8) >= threshold ? scale : 0.0f;
#endif
  return buffer + skip;
}

/// Calls f(first, n, m) for consecutive pieces [first, first + n) of [begin, end), n <= kMaskChunk,
/// with m the pieces' multipliers (mask_chunk): the one loop every masked kernel is built on.
template <class F>
void for_each_mask_chunk(std::uint64_t seed, std::uint64_t call, std::uint32_t threshold,
                         float scale, std::size_t begin, std::size_t end, F&& f) {
  alignas(64) float buffer[kMaskBuffer];
  for (std::size_t first = begin; first < end; first += kMaskChunk) {
    const std::size_t n = std::min(kMaskChunk, end - first);
    f(first, n, mask_chunk(seed, call, threshold, scale, first, n, buffer));
  }
}

}  // namespace TAPEGRAD_SET_NAMESPACE
}  // namespace tapegrad::detail
