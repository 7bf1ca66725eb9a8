// tests/core/test_philox.cpp: the counter-based generator behind every dropout mask (src/core/philox.hpp):
// Philox4x32-10 against the published known-answer vectors, the vectorised blocks against the
// reference form, and the keep threshold against its definition at the edges of p.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "../../src/core/philox.hpp"

using namespace tapegrad::detail;

TEST_SUITE("random.philox") {
  // Random123's known-answer vectors for Philox4x32-10, from DEShawResearch/random123:
  // tests/kat_vectors (counter words 0..3, key words 0..1, expected output words 0..3); the third
  // uses the hexadecimal digits of pi. The same file is what Random123's own kat tests check.
  TEST_CASE("Philox4x32-10 gives Random123's known answers") {
    struct Kat {
      std::uint32_t ctr[4], key[2], out[4];
    };
    const Kat kats[] = {
        {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
         {0x00000000, 0x00000000},
         {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (const Kat& k : kats) {
      std::uint32_t out[4];
      philox4x32_10(k.ctr, k.key, out);
      for (int j = 0; j < 4; ++j) CHECK(out[j] == k.out[j]);
      // The same block through the vectorised path: seed = key, call = counter words 2 and 3, q = words 0 and 1.
      std::uint32_t words[4 * kPhiloxLanes];
      const std::uint64_t seed = k.key[0] | std::uint64_t{k.key[1]} << 32;
      const std::uint64_t q = k.ctr[0] | std::uint64_t{k.ctr[1]} << 32,
                          call = k.ctr[2] | std::uint64_t{k.ctr[3]} << 32;
      philox_blocks(seed, call, q, kPhiloxLanes, words);
      for (int j = 0; j < 4; ++j) CHECK(words[j] == k.out[j]);
    }
  }

  TEST_CASE(
      "the vectorised blocks equal the reference form, block by block, across a wrap of q's low "
      "word") {
    for (const std::uint64_t q0 : {std::uint64_t{0}, std::uint64_t{0xFFFFFFF8},
                                   std::uint64_t{0xFFFFFFFC}, std::uint64_t{123456789}}) {
      constexpr std::size_t count = 4 * kPhiloxLanes;
      std::vector<std::uint32_t> fast(4 * count), portable(4 * count);
      philox_blocks(0x9E3779B97F4A7C15ull, 0xDEADBEEF00000001ull, q0, count, fast.data());
      for (std::size_t g = 0; g < count; g += kPhiloxLanes)
        philox_blocks_portable(0x9E3779B97F4A7C15ull, 0xDEADBEEF00000001ull, q0 + g,
                               portable.data() + 4 * g);
      CHECK(fast == portable);
      for (std::size_t b = 0; b < count; ++b) {  // and the reference, one block at a time
        const std::uint64_t q = q0 + b;
        const std::uint32_t ctr[4] = {std::uint32_t(q), std::uint32_t(q >> 32), 0x00000001u,
                                      0xDEADBEEFu};
        const std::uint32_t key[2] = {0x7F4A7C15u, 0x9E3779B9u};
        std::uint32_t out[4];
        philox4x32_10(ctr, key, out);
        for (int j = 0; j < 4; ++j) REQUIRE(fast[4 * b + j] == out[j]);
      }
    }
  }

  TEST_CASE("mask chunks give keep ? scale : 0 for any start and length") {
    const std::uint32_t threshold = keep_threshold(0.25);
    std::vector<std::uint32_t> words(4 * 128);
    philox_blocks(5, 6, 0, 128, words.data());
    alignas(64) float buffer[kMaskBuffer];
    for (std::size_t first :
         {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{5}, std::size_t{63}})
      for (std::size_t n :
           {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{255}, kMaskChunk}) {
        const float* m = mask_chunk(5, 6, threshold, 1.5f, first, n, buffer);
        for (std::size_t i = 0; i < n; ++i)
          REQUIRE(m[i] == ((words[first + i] >> 8) >= threshold ? 1.5f : 0.0f));
      }
  }

  TEST_CASE("x >> 8 >= keep_threshold(p) is exactly (x >> 8) * 2^-24 >= p, at the edges of p") {
    for (const double p :
         {0.0, 0x1.0p-30, 0x1.0p-24, 0.1, 0.5, 1.0 - 0x1.0p-24, 1.0 - 0x1.0p-25, 1.0}) {
      const std::uint32_t t = keep_threshold(p);
      for (const std::uint32_t u : {0u, 1u, t > 0 ? t - 1 : 0u, t, t + 1, (1u << 24) - 1})
        if (u < (1u << 24))
          CHECK_MESSAGE((u >= t) == (double(u) * 0x1.0p-24 >= p), "p = ", p, ", u = ", u);
    }
    CHECK(keep_threshold(1.0) == 1u << 24);  // p = 1 keeps nothing
    CHECK(keep_threshold(0.0) == 0u);        // p = 0 keeps everything
  }

}  // TEST_SUITE
