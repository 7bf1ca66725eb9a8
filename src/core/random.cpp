// src/core/random.cpp: the portable Generator (mt19937_64 and its draws) and the arrays drawn from it.
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/sizes.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <optional>
#include <sstream>
#include <string_view>

namespace tapegrad {

// ---- mt19937_64 ([rand.eng.mers]: w = 64, n = 312, m = 156, r = 31) ----------------------------

void Mt19937_64::seed_engine(std::uint64_t seed) {
  state_[0] = seed;
  for (std::size_t i = 1; i < state_size; ++i) {
    const std::uint64_t prev = state_[i - 1];
    state_[i] = 6364136223846793005ULL * (prev ^ (prev >> 62)) + i;
  }
  index_ = state_size;
}

void Mt19937_64::twist() {
  // x[i] = x[i + m] ^ (y >> 1) ^ (y odd ? a : 0),  y = upper 33 bits of x[i] | lower 31 of x[i + 1]
  // (indices mod n). The three loops are the recurrence split where i + m and i + 1 wrap; each is
  // free of dependences within 156 words, so the compiler vectorises them.
  constexpr std::size_t n = state_size, m = 156;
  constexpr std::uint64_t upper = ~0ULL << 31, lower = ~upper, a = 0xB5026F5AA96619E9ULL;
  std::uint64_t* x = state_;
  auto mix = [](std::uint64_t hi, std::uint64_t lo) {
    const std::uint64_t y = (hi & upper) | (lo & lower);
    return (y >> 1) ^ ((0 - (y & 1)) & a);
  };
  for (std::size_t i = 0; i < n - m; ++i) x[i] = x[i + m] ^ mix(x[i], x[i + 1]);
  for (std::size_t i = n - m; i < n - 1; ++i) x[i] = x[i + m - n] ^ mix(x[i], x[i + 1]);
  x[n - 1] = x[m - 1] ^ mix(x[n - 1], x[0]);
  index_ = 0;
}

std::string Mt19937_64::text() const {
  std::ostringstream os;
  for (std::uint64_t word : state_) os << word << ' ';
  os << index_;
  return os.str();
}

namespace {
// A state text comes from a file, so it is read as strictly as text() writes it: unsigned decimal
// integers, the whole word (no sign, no '+', no junk after), words separated by single spaces.
std::optional<std::uint64_t> whole_number(std::string_view word) {
  std::uint64_t value = 0;
  const auto [end, err] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (word.empty() || err != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

// The next word of `text` (up to a single space, or the end), removed from it.
std::string_view next_word(std::string_view& text) {
  const std::size_t space = std::min(text.find(' '), text.size());
  const std::string_view word = text.substr(0, space);
  text.remove_prefix(std::min(space + 1, text.size()));
  return word;
}
}  // namespace

bool Mt19937_64::set_text(const std::string& text) {
  std::string_view rest(text);
  std::uint64_t words[state_size];
  for (std::uint64_t& w : words) {
    const auto word = whole_number(next_word(rest));
    if (!word) return false;
    w = *word;
  }
  const auto index = whole_number(rest);  // the last word: nothing may follow it
  if (!index || *index > state_size) return false;
  std::copy(words, words + state_size, state_);
  index_ = static_cast<std::size_t>(*index);
  return true;
}

// ---- Generator ----------------------------------------------------------------------------------

namespace {
std::uint64_t new_stream_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

Generator::Generator(const Generator& other)
    : engine_(other.engine_),
      seed_(other.seed_),
      stream_id_(new_stream_id()),
      has_spare_(other.has_spare_),
      spare_(other.spare_) {}

Generator& Generator::operator=(const Generator& other) {
  engine_ = other.engine_;
  seed_ = other.seed_;
  has_spare_ = other.has_spare_;
  spare_ = other.spare_;
  stream_id_ = new_stream_id();
  return *this;
}

void Generator::manual_seed(std::uint64_t seed) {
  stream_id_ = new_stream_id();
  seed_ = seed;
  engine_.seed_engine(seed);
  has_spare_ = false;
  spare_ = 0.0;
}

double Generator::normal() {
  // Box-Muller: two uniforms give two independent normals, z0 now and z1 on the next call.
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform_double();  // in (0, 1]: log(u1) is finite
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

std::int64_t Generator::randint(std::int64_t low, std::int64_t high) {
  check<ValueError>(low < high, "random_ expects 'from' to be less than 'to', but got from=", low,
                    " >= to=", high, " | Generator::randint: expected low < high");
  const auto span = static_cast<std::uint64_t>(high - low);
  // Rejection sampling: without it the low values of a non-power-of-two span come up more often.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  std::uint64_t r;
  do r = engine_();
  while (r >= limit);
  return low + static_cast<std::int64_t>(r % span);
}

std::string Generator::state() const {
  std::ostringstream os;
  os.precision(17);
  os << seed_ << ' ' << has_spare_ << ' ' << std::hexfloat << spare_ << std::defaultfloat << ' '
     << engine_.text();
  return os.str();
}

// "{seed} {0|1} {spare, a finite hex float} {engine words}", each read whole, as state() writes it.
void Generator::set_state(const std::string& state) {
  std::string_view rest(state);
  const auto seed = whole_number(next_word(rest));
  const std::string_view flag = next_word(rest);
  const std::string spare_text(next_word(rest));
  char* end = nullptr;
  const double spare = std::strtod(spare_text.c_str(), &end);
  const bool spare_ok = !spare_text.empty() &&
                        !std::isspace(static_cast<unsigned char>(spare_text[0])) &&
                        end == spare_text.c_str() + spare_text.size() && std::isfinite(spare);
  Mt19937_64 engine;
  if (!seed || (flag != "0" && flag != "1") || !spare_ok || !engine.set_text(std::string(rest)))
    fail<ValueError>("Generator::set_state: expected text from Generator::state(), got '",
                     state.substr(0, 40), state.size() > 40 ? "...'" : "'");
  seed_ = *seed;
  has_spare_ = flag == "1";
  spare_ = spare;
  engine_ = engine;
  stream_id_ = new_stream_id();
}

std::shared_ptr<Generator> default_generator() {
  static const std::shared_ptr<Generator> gen = std::make_shared<Generator>(0);
  return gen;
}

void manual_seed(std::uint64_t seed) { default_generator()->manual_seed(seed); }

namespace {
Generator& pick(Generator* gen) { return gen != nullptr ? *gen : *default_generator(); }
}  // namespace

xt::xarray<float> randn(const Shape& shape, Generator* gen) {
  xt::xarray<float> a = new_array(shape, "randn");
  normal_(a, 0.0, 1.0, gen);
  return a;
}

xt::xarray<float> rand(const Shape& shape, Generator* gen) {
  xt::xarray<float> a = new_array(shape, "rand");
  Generator& g = pick(gen);
  for (float& v : a) v = g.uniform_float();
  return a;
}

xt::xarray<float> uniform(const Shape& shape, double low, double high, Generator* gen) {
  xt::xarray<float> a = new_array(shape, "uniform");
  uniform_(a, low, high, gen);
  return a;
}

void uniform_(xt::xarray<float>& a, double low, double high, Generator* gen) {
  Generator& g = pick(gen);
  for (float& v : a) v = static_cast<float>(low + (high - low) * g.uniform_double());
}

void normal_(xt::xarray<float>& a, double mean, double std, Generator* gen) {
  Generator& g = pick(gen);
  for (float& v : a) v = static_cast<float>(mean + std * g.normal());
}

}  // namespace tapegrad
