// tests/kernels/test_elementwise.cpp: the elementwise ops on every kernel set this CPU can run.
// The fast sets (baseline, avx2, avx512: one source compiled three times) give the same bits. The
// reference kernels compute the same float operations, so they give the same bits too, but for
// exp and sigmoid: there the C library's exp stands for exp_f32, a rounding or two apart (the
// bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"
#include "kernel_set_compare.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::roundings_apart;

namespace {
using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

// Values over [-8, 8] and the special values; positive = true takes |x| (log, sqrt, pow).
Array values(std::uint64_t seed, bool positive) {
  Array x =
      testing::input({70, 1000}, seed, false).data() * 3.0f;  // 70000: over two threads' grain
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f,   -0.0f,  inf,   -inf,   std::nanf(""), 1e30f,
                           -1e30f, 1e-30f, 90.0f, -90.0f, -104.0f,       0.5f};
  for (std::size_t i = 0; i < std::size(special); ++i) x.flat(i) = special[i];
  return positive ? Array(xt::abs(x)) : x;
}

// A mask of shape (1, 1000), broadcast over the rows: every third column.
Mask column_mask() {
  Mask m = xt::zeros<bool>({std::size_t{1}, std::size_t{1000}});
  for (std::size_t j = 0; j < 1000; j += 3) m(0, j) = true;
  return m;
}

const std::vector<std::pair<std::string, Unary>> kUnary = {
    {"neg", [](const Tensor& a) { return -a; }},
    {"exp", [](const Tensor& a) { return ops::exp(a); }},
    {"log", [](const Tensor& a) { return ops::log(a); }},
    {"sqrt", [](const Tensor& a) { return ops::sqrt(a); }},
    {"pow 3", [](const Tensor& a) { return ops::pow(a, 3.0); }},
    {"pow 0.5", [](const Tensor& a) { return ops::pow(a, 0.5); }},
    {"pow 0", [](const Tensor& a) { return ops::pow(a, 0.0); }},
    {"tanh", [](const Tensor& a) { return ops::tanh(a); }},
    {"relu", [](const Tensor& a) { return ops::relu(a); }},
    {"sigmoid", [](const Tensor& a) { return ops::sigmoid(a); }},
    {"a + s", [](const Tensor& a) { return a + 0.3; }},
    {"a - s", [](const Tensor& a) { return a - 0.3; }},
    {"s - a", [](const Tensor& a) { return 0.3 - a; }},
    {"a * s", [](const Tensor& a) { return a * 0.3; }},
    {"a / s", [](const Tensor& a) { return a / 0.3; }},
    {"s / a", [](const Tensor& a) { return 0.3 / a; }},
    {"masked_fill", [](const Tensor& a) { return ops::masked_fill(a, column_mask(), -1e9); }},
};
const std::vector<std::pair<std::string, Binary>> kBinary = {
    {"a + b", [](const Tensor& a, const Tensor& b) { return a + b; }},
    {"a - b", [](const Tensor& a, const Tensor& b) { return a - b; }},
    {"a * b", [](const Tensor& a, const Tensor& b) { return a * b; }},
    {"a / b", [](const Tensor& a, const Tensor& b) { return a / b; }},
    {"a * a", [](const Tensor& a, const Tensor&) { return a * a; }},
};

// y and da on the set, for dy = 1 (da is then the derivative) or for dy spread over [-8, 8] and
// the special values.
std::vector<Array> run(CpuCapability set, const Unary& f, bool positive, bool dy_ones = false) {
  set_cpu_capability(set);
  Tensor a(values(1, positive), true);
  Tensor y = f(a);
  y.backward(dy_ones ? Array(xt::ones<float>(y.shape())) : values(3, false));
  return {y.data(), a.grad()};
}

// y, da and db on the set; b needs no gradient when b_grad is false.
std::vector<Array> run(CpuCapability set, const Binary& f, bool b_grad) {
  set_cpu_capability(set);
  Tensor a(values(1, false), true), b(values(2, false), b_grad);
  Tensor y = f(a, b);
  y.backward(values(3, false));
  return {y.data(), a.grad(), b.has_grad() ? b.grad() : Array()};
}

bool positive_only(const std::string& name) {
  return name == "log" || name == "sqrt" || name.starts_with("pow");
}
}  // namespace

TEST_SUITE("ops.elementwise_kernels") {
  TEST_CASE("every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (CpuCapability set : available_cpu_capabilities()) {
      if (set == CpuCapability::reference) continue;
      CAPTURE(to_string(set));
      for (const auto& [name, f] : kUnary) {
        CAPTURE(name);
        const auto want = run(CpuCapability::baseline, f, positive_only(name));
        const auto got = run(set, f, positive_only(name));
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], want[i]));
      }
      for (const auto& [name, f] : kBinary)
        for (bool b_grad : {true, false}) {
          CAPTURE(name);
          const auto want = run(CpuCapability::baseline, f, b_grad);
          const auto got = run(set, f, b_grad);
          for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], want[i]));
        }
    }
  }

  TEST_CASE("the reference kernels give the same bits, but exp and sigmoid within 2 roundings") {
    CapabilityGuard guard;
    for (const auto& [name, f] : kUnary) {
      CAPTURE(name);
      const auto fast = run(CpuCapability::baseline, f, positive_only(name), true);
      const auto ref = run(CpuCapability::reference, f, positive_only(name), true);
      for (std::size_t i = 0; i < fast.size(); ++i) {
        if (name == "exp" || name == "sigmoid") {
          INFO(name, " output ", i, ": ", roundings_apart(ref[i], fast[i]), " roundings");
          CHECK(roundings_apart(ref[i], fast[i]) <= 2.0);
        } else {
          CHECK(bit_equal(ref[i], fast[i]));
        }
      }
    }
    for (const auto& [name, f] : kBinary) {
      CAPTURE(name);
      const auto fast = run(CpuCapability::baseline, f, true);
      const auto ref = run(CpuCapability::reference, f, true);
      for (std::size_t i = 0; i < fast.size(); ++i) CHECK(bit_equal(ref[i], fast[i]));
    }
  }

  TEST_CASE("backward runs the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    set_cpu_capability(CpuCapability::reference);
    Tensor a(values(1, false), true);
    Tensor y = ops::exp(a);
    set_cpu_capability(available_cpu_capabilities().back());
    y.backward(values(3, false));
    CHECK(bit_equal(a.grad(), run(CpuCapability::reference, kUnary[1].second, false)[1]));
  }
}
