// include/tapegrad/random.hpp
//
// Generator: the one source of randomness (initialisation, dropout masks, data). Its engine is
// mt19937_64, whose output the C++ standard fixes, and it turns raw 64-bit draws into numbers
// itself, because std::uniform_real_distribution and std::normal_distribution differ between
// standard libraries (SPEC 2.1.4):
//   uniform float in [0, 1):   u24 = (g() >> 40) * 2^-24      (exact in float)
//   uniform double in [0, 1):  u53 = (g() >> 11) * 2^-53
//   normal: Box-Muller in double on u1 = 1 - u53, u2 = u53, giving z0 then z1.
// The same seed gives the same numbers on every machine. Values differ from PyTorch's generator;
// only the distributions match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>   // std::mt19937_64: the reference Mt19937_64 reproduces (the tests compare them)
#include <string>

#include <xtensor/xarray.hpp>

#include "tapegrad/errors.hpp"

namespace tapegrad {

/// std::mt19937_64, bit for bit (the C++ standard's [rand.eng.mers] with its parameters: same
/// seeding, same outputs, and state text in libstdc++'s layout: the 312 words, then the index).
/// tapegrad has its own copy so that a dropout mask can be drawn a block of 312 words at a time
/// in vectorised loops (fill_keep_mask), about three times faster than one call per draw.
class Mt19937_64 {
 public:
  static constexpr std::size_t state_size = 312;
  explicit Mt19937_64(std::uint64_t seed = 5489u) { seed_engine(seed); }
  void seed_engine(std::uint64_t seed);
  std::uint64_t operator()() {
    if (index_ >= state_size) twist();
    return temper(state_[index_++]);
  }
  /// keep[i] = (draw_i >> 40) >= threshold for the next n draws.
  void fill_keep_mask(std::uint8_t* keep, std::size_t n, std::uint64_t threshold);
  std::string text() const;               ///< "x0 x1 ... x311 index"
  bool set_text(const std::string& text); ///< false (and unchanged) when the text is not a state

 private:
  static std::uint64_t temper(std::uint64_t z) {
    z ^= (z >> 29) & 0x5555555555555555ULL;
    z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
    z ^= (z << 37) & 0xFFF7EEE000000000ULL;
    return z ^ (z >> 43);
  }
  void twist();                           ///< the next 312 words of the recurrence
  std::uint64_t state_[state_size];
  std::size_t index_;
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(std::uint64_t seed);
  std::uint64_t seed() const { return seed_; }

  std::uint64_t next_u64() { return engine_(); }
  float uniform_float() { return static_cast<float>(engine_() >> 40) * 0x1.0p-24f; }   ///< u24
  double uniform_double() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; } ///< u53
  double normal();                              ///< N(0, 1), Box-Muller (z0, then z1)
  std::int64_t randint(std::int64_t low, std::int64_t high);   ///< uniform in [low, high)
  /// keep[i] = uniform_float() >= p for i = 0 .. n-1: the same n draws, in order, and the same
  /// results as that loop (u24 / 2^24 >= p  <=>  u24 >= ceil(p * 2^24), exactly), drawn a block
  /// at a time. The dropout mask of SPEC 2.7. p must be in [0, 1].
  void keep_mask(std::uint8_t* keep, std::size_t n, double p);

  /// The whole state as text (engine and the pending Box-Muller value): save it with a
  /// checkpoint and set_state() it to continue the exact same stream.
  std::string state() const;
  void set_state(const std::string& state);

 private:
  Mt19937_64 engine_;
  std::uint64_t seed_ = 0;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

/// The process-wide default generator that random layers use when given none.
std::shared_ptr<Generator> default_generator();
/// Reseeds the default generator.
void manual_seed(std::uint64_t seed);

/// Arrays filled in row-major order. A null generator means the default one.
xt::xarray<float> randn(const Shape& shape, Generator* gen = nullptr);            ///< N(0, 1)
xt::xarray<float> rand(const Shape& shape, Generator* gen = nullptr);             ///< u24 in [0, 1)
xt::xarray<float> uniform(const Shape& shape, double low, double high, Generator* gen = nullptr);
/// Fills `a` in place with float(low + (high - low) * u53) (PyTorch's uniform_).
void uniform_(xt::xarray<float>& a, double low, double high, Generator* gen = nullptr);
/// Fills `a` in place with float(mean + std * normal()) (PyTorch's normal_).
void normal_(xt::xarray<float>& a, double mean, double std, Generator* gen = nullptr);

}  // namespace tapegrad
