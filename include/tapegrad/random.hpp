// include/tapegrad/random.hpp
//
// Generator: the one source of randomness (initialisation, dropout masks, data). It wraps
// std::mt19937_64, whose output the C++ standard fixes, and turns raw 64-bit draws into numbers
// itself, because std::uniform_real_distribution and std::normal_distribution differ between
// standard libraries (SPEC 2.1.4):
//   uniform float in [0, 1):   u24 = (g() >> 40) * 2^-24      (exact in float)
//   uniform double in [0, 1):  u53 = (g() >> 11) * 2^-53
//   normal: Box-Muller in double on u1 = 1 - u53, u2 = u53, giving z0 then z1.
// The same seed gives the same numbers on every machine. Values differ from PyTorch's generator;
// only the distributions match.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include <xtensor/xarray.hpp>

#include "tapegrad/errors.hpp"

namespace tapegrad {

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

  /// The whole state as text (engine and the pending Box-Muller value): save it with a
  /// checkpoint and set_state() it to continue the exact same stream.
  std::string state() const;
  void set_state(const std::string& state);

 private:
  std::mt19937_64 engine_;
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
