// src/random.cpp: the portable Generator of SPEC 2.1.4 and the arrays drawn from it.
#include "tapegrad/random.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

namespace tapegrad {

void Generator::manual_seed(std::uint64_t seed) {
  seed_ = seed;
  engine_.seed(seed);
  has_spare_ = false;
  spare_ = 0.0;
}

double Generator::normal() {
  // Box-Muller: two uniforms give two independent normals, z0 now and z1 on the next call.
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform_double();   // in (0, 1]: log(u1) is finite
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
  do r = engine_(); while (r >= limit);
  return low + static_cast<std::int64_t>(r % span);
}

std::string Generator::state() const {
  std::ostringstream os;
  os.precision(17);
  os << seed_ << ' ' << has_spare_ << ' ' << std::hexfloat << spare_ << std::defaultfloat << ' ' << engine_;
  return os.str();
}

void Generator::set_state(const std::string& state) {
  std::istringstream is(state);
  std::uint64_t seed = 0;
  bool has_spare = false;
  std::string spare_text;
  std::mt19937_64 engine;
  is >> seed >> has_spare >> spare_text >> engine;
  if (is.fail())
    fail<ValueError>("Generator::set_state: expected text from Generator::state(), got '",
                     state.substr(0, 40), state.size() > 40 ? "...'" : "'");
  seed_ = seed;
  has_spare_ = has_spare;
  spare_ = std::strtod(spare_text.c_str(), nullptr);
  engine_ = engine;
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
  xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
  normal_(a, 0.0, 1.0, gen);
  return a;
}

xt::xarray<float> rand(const Shape& shape, Generator* gen) {
  xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
  Generator& g = pick(gen);
  for (float& v : a) v = g.uniform_float();
  return a;
}

xt::xarray<float> uniform(const Shape& shape, double low, double high, Generator* gen) {
  xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
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
