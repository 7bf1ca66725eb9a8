// tests/helpers.hpp: comparisons that explain themselves when they fail, and the inputs and
// gradient checks the op tests share. It includes only what it uses, not the umbrella core.hpp, so
// that a test of a new op includes that op's own header and nothing else has to list it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <tapegrad/autograd/gradcheck.hpp>
#include <tapegrad/core/errors.hpp>
#include <tapegrad/core/gemm_engine.hpp>
#include <tapegrad/core/random.hpp>
#include <tapegrad/core/tensor.hpp>

namespace tapegrad::testing {

/// |a - b| <= atol + rtol * |b| everywhere, shapes equal. On failure, prints the shapes, the first
/// elements side by side and the largest difference (llm.c style).
inline bool all_close(const Array& a, const Array& b, double atol = 1e-6, double rtol = 1e-5) {
  std::ostringstream why;
  bool ok = a.shape() == b.shape();
  if (!ok) why << "shapes differ: " << str(a.shape()) << " vs " << str(b.shape());
  double worst = 0.0;
  std::size_t worst_at = 0;
  if (ok)
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double x = a.data()[i], y = b.data()[i];
      const double excess = std::abs(x - y) - (atol + rtol * std::abs(y));
      const bool same_nonfinite = (std::isnan(x) && std::isnan(y)) || (std::isinf(x) && x == y);
      if (same_nonfinite) continue;
      if (excess > 0.0 || std::isnan(x) != std::isnan(y)) {
        ok = false;
        if (std::abs(x - y) >= worst || std::isnan(x - y)) {
          worst = std::abs(x - y);
          worst_at = i;
        }
      }
    }
  if (!ok && a.shape() == b.shape()) {
    why.precision(9);
    why << "first elements (got | expected):\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(a.size(), 8); ++i)
      why << "  [" << i << "] " << a.data()[i] << " | " << b.data()[i] << '\n';
    why << "largest difference " << worst << " at flat index " << worst_at << " ("
        << a.data()[worst_at] << " vs " << b.data()[worst_at] << ")";
  }
  if (!ok) MESSAGE(why.str());
  return ok;
}

/// Bit-for-bit equality (NaNs compare equal to NaNs with the same bits).
inline bool bit_equal(const Array& a, const Array& b) {
  if (a.shape() != b.shape()) return false;
  return std::equal(a.begin(), a.end(), b.begin(),
                    [](float x, float y) { return std::memcmp(&x, &y, sizeof(float)) == 0; });
}

/// A fresh generator with a fixed seed, for test inputs.
inline Generator seeded(std::uint64_t seed) { return Generator(seed); }

/// A standard-normal tensor of `shape`, the same for the same seed.
inline Tensor input(const Shape& shape, std::uint64_t seed, bool requires_grad = true) {
  Generator g(seed);
  return Tensor(randn(shape, &g), requires_grad);
}

/// An array of `shape` filled row-major from `v` (golden values pasted from PyTorch). Often
/// called while statics are initialised, outside any test, hence an exception, not a REQUIRE.
inline Array values(const Shape& shape, std::vector<float> v) {
  check<ValueError>(v.size() == xt::compute_size(shape), "values: ", v.size(),
                    " numbers for shape ", shape);
  Array a = Array::from_shape(shape);
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

/// gradcheck (finite differences against the tape's backward), failing with its report.
inline void check_gradients(const GradcheckFn& fn, const std::vector<Tensor>& inputs) {
  const GradcheckResult r = gradcheck(fn, inputs);
  CHECK_MESSAGE(r.ok, r.message);
}

/// A value against a golden that may be special: NaN where the golden is NaN, the same infinity,
/// or a finite value within `relative` of the golden's size, max(1, |want|). -0 equals +0.
inline bool same_special(float got, float want, float relative) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::isfinite(got) && std::abs(got - want) <= relative * std::max(1.0f, std::abs(want));
}

/// "{1.000000, nan, -inf}": values in a failure message.
template <class Floats>
std::string show(const Floats& values) {
  std::string s;
  for (float f : values) s += (s.empty() ? "" : ", ") + std::to_string(f);
  return "{" + s + "}";
}

/// Restores the engine of the matrix products in use when the test ends.
struct GemmEngineScope {
  GemmEngine saved = gemm_engine();
  ~GemmEngineScope() { set_gemm_engine(saved); }
};

}  // namespace tapegrad::testing
