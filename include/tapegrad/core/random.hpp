// include/tapegrad/core/random.hpp
//
// Generator: the sequential source of randomness (initialisation, data, and each dropout layer's
// seed; the dropout masks themselves come from a counter-based stream, ops/dropout.hpp). Its
// engine is mt19937_64, whose output the C++ standard fixes, and it turns raw 64-bit draws into
// numbers itself, because std::uniform_real_distribution and std::normal_distribution differ
// between standard libraries:
//   uniform float in [0, 1):   u24 = (g() >> 40) * 2^-24      (exact in float)
//   uniform double in [0, 1):  u53 = (g() >> 11) * 2^-53
//   normal: Box-Muller in double on u1 = 1 - u53, u2 = u53, giving z0 then z1.
// The same seed gives the same numbers on every machine. Values differ from PyTorch's generator;
// only the distributions match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>  // std::mt19937_64: the reference Mt19937_64 reproduces (the tests compare them)
#include <string>

#include <xtensor/xarray.hpp>

#include "tapegrad/core/errors.hpp"

namespace tapegrad {

/// std::mt19937_64, bit for bit (the C++ standard's [rand.eng.mers] with its parameters: same
/// seeding, same outputs, and state text in libstdc++'s layout: the 312 words, then the index).
/// tapegrad has its own copy so that the state text is the same whatever the standard library.
class Mt19937_64 {
 public:
  static constexpr std::size_t state_size = 312;
  explicit Mt19937_64(std::uint64_t seed = 5489u) { seed_engine(seed); }
  void seed_engine(std::uint64_t seed);
  std::uint64_t operator()() {
    if (index_ >= state_size) twist();
    return temper(state_[index_++]);
  }
  std::string text() const;                ///< "x0 x1 ... x311 index"
  bool set_text(const std::string& text);  ///< false (and unchanged) when the text is not a state

 private:
  static std::uint64_t temper(std::uint64_t z) {
    z ^= (z >> 29) & 0x5555555555555555ULL;
    z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
    z ^= (z << 37) & 0xFFF7EEE000000000ULL;
    return z ^ (z >> 43);
  }
  void twist();  ///< the next 312 words of the recurrence
  std::uint64_t state_[state_size];
  std::size_t index_;
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) { manual_seed(seed); }
  /// A copy continues the same stream; as a new stream (stream_id()), it is never "the same" one.
  Generator(const Generator& other);
  Generator& operator=(const Generator& other);
  void manual_seed(std::uint64_t seed);
  std::uint64_t seed() const { return seed_; }
  /// Changes whenever the stream is replaced rather than drawn from: manual_seed, set_state,
  /// assignment. A Dropout compares it with the value it saw when it took its seed, to take a
  /// new seed (and restart its masks) after its generator was reseeded, as PyTorch's masks restart
  /// after torch.manual_seed. Unique in the process (a counter), never saved.
  std::uint64_t stream_id() const { return stream_id_; }

  std::uint64_t next_u64() { return engine_(); }
  float uniform_float() { return static_cast<float>(engine_() >> 40) * 0x1.0p-24f; }    ///< u24
  double uniform_double() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  ///< u53
  double normal();                                            ///< N(0, 1), Box-Muller (z0, then z1)
  std::int64_t randint(std::int64_t low, std::int64_t high);  ///< uniform in [low, high)

  /// The whole state as text (engine and the pending Box-Muller value): save it with a
  /// checkpoint and set_state() it to continue the exact same stream.
  std::string state() const;
  void set_state(const std::string& state);

 private:
  Mt19937_64 engine_;
  std::uint64_t seed_ = 0;
  std::uint64_t stream_id_ = 0;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

/// The process-wide default generator that random layers use when given none.
std::shared_ptr<Generator> default_generator();
/// Reseeds the default generator.
void manual_seed(std::uint64_t seed);

/// Arrays filled in row-major order. A null generator means the default one.
xt::xarray<float> randn(const Shape& shape, Generator* gen = nullptr);  ///< N(0, 1)
xt::xarray<float> rand(const Shape& shape, Generator* gen = nullptr);   ///< u24 in [0, 1)
xt::xarray<float> uniform(const Shape& shape, double low, double high, Generator* gen = nullptr);
/// Fills `a` in place with float(low + (high - low) * u53) (PyTorch's uniform_).
void uniform_(xt::xarray<float>& a, double low, double high, Generator* gen = nullptr);
/// Fills `a` in place with float(mean + std * normal()) (PyTorch's normal_).
void normal_(xt::xarray<float>& a, double mean, double std, Generator* gen = nullptr);

}  // namespace tapegrad
