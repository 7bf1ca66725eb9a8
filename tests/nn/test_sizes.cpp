// tests/nn/test_sizes.cpp: the layers refuse sizes whose product does not fit, with the sizes in
// the message, where they make their parameters and buffers (core/sizes.hpp; the core's own checks
// are in tests/core/test_sizes.cpp), and an allocation larger than the machine says what asked for it.
#include <doctest/doctest.h>

#include <cstdint>

#include <tapegrad/core.hpp>
#include <tapegrad/nn.hpp>

using namespace tapegrad;

namespace {
// 67280421310721 * 274177 = 2^64 + 1: a size_t product wraps to 1.
constexpr std::int64_t kA = 67280421310721, kB = 274177;
constexpr std::int64_t k2_32 = std::int64_t(1) << 32;
}  // namespace

TEST_SUITE("sizes") {
  TEST_CASE("an Embedding whose sizes wrap around is refused, with or without a padding row") {
    CHECK_THROWS_WITH_AS(nn::Embedding(kA, kB),
                         doctest::Contains("Embedding: weight: the shape (67280421310721, 274177)"),
                         ShapeError);
    CHECK_THROWS_AS(nn::Embedding(nn::EmbeddingOptions(kA, kB).padding_idx(0)), ShapeError);
    CHECK_THROWS_WITH_AS(nn::Embedding(k2_32, k2_32),
                         doctest::Contains("(4294967296, 4294967296) has 18446744073709551616"),
                         ShapeError);
  }

  TEST_CASE("a Linear or a LayerNorm whose sizes wrap around is refused") {
    CHECK_THROWS_WITH_AS(nn::Linear(kA, kB),
                         doctest::Contains("Linear: weight: the shape (274177, 67280421310721)"),
                         ShapeError);
    CHECK_THROWS_AS(nn::LayerNorm(nn::LayerNormOptions({kA, kB})), ShapeError);
  }

  TEST_CASE("a PositionalEncoding whose table would wrap around is refused") {
    CHECK_THROWS_WITH_AS(
        nn::PositionalEncoding(kB, 0.0, kA),
        doctest::Contains("PositionalEncoding: pe: the shape (1, 67280421310721, 274177)"),
        ShapeError);
  }

  TEST_CASE(
      "an allocation larger than the machine says how many bytes were asked for and by what") {
    // Linear(2^40, 1): 2^40 floats, 4 TiB. PyTorch: "DefaultCPUAllocator: not enough memory: you
    // tried to allocate 4398046511104 bytes."
    CHECK_THROWS_WITH_AS(
        nn::Linear(std::int64_t(1) << 40, 1),
        doctest::Contains("you tried to allocate 4398046511104 bytes. | Linear: weight: an array "
                          "of shape (1, 1099511627776) needs 4.0 TiB"),
        OutOfMemoryError);
    CHECK_THROWS_AS(randn(Shape{std::size_t(1) << 20, std::size_t(1) << 20}), OutOfMemoryError);
  }
}  // TEST_SUITE
