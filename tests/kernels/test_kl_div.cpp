// tests/kernels/test_kl_div.cpp: kl_div on every kernel set this CPU can run. The fast sets
// (one source compiled three times) give the same bits; the reference kernels call std::exp where
// the fast ones call exp_f32 (log_target only), so they differ there by a float rounding or two
// (the bound: docs/semantics.md#kernel-sets), and give the same bits elsewhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tapegrad/core/cpu.hpp>
#include <tapegrad/core.hpp>

#include "../helpers.hpp"
#include "../capability_guard.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::input;

namespace {
const char* const kReductions[] = {"none", "sum", "mean", "batchmean"};

// The loss and dinput of kl_div on the set: log-probabilities x against a target of
// probabilities (some exactly 0) or, with log_target, of log-probabilities.
std::vector<Array> run(CpuCapability set, const std::string& reduction, bool log_target) {
  set_cpu_capability(set);
  const Shape shape{40, 33};
  Tensor x = input(shape, 1);
  Array t = input(shape, 2, false).data();
  if (!log_target) t = xt::abs(t) * 0.1f;
  for (std::size_t i = 0; i < t.size(); i += 9) t.flat(i) = 0.0f;
  Tensor y = ops::kl_div(x, t, KLDivOptions().reduction(reduction).log_target(log_target));
  if (reduction == "none")
    y.backward(input(shape, 3, false).data());
  else
    y.backward();
  return {y.data(), x.grad()};
}

// |a - b| within `ulps` float roundings of max(|a|, |b|, floor).
bool within_roundings(const Array& a, const Array& b, double ulps, double floor = 0.0) {
  bool ok = a.shape() == b.shape();
  for (std::size_t i = 0; ok && i < a.size(); ++i) {
    const double x = a.flat(i), y = b.flat(i);
    ok = std::abs(x - y) <= ulps * 0x1p-24 * std::max({std::abs(x), std::abs(y), floor});
    if (!ok) MESSAGE("at ", i, ": ", x, " vs ", y);
  }
  return ok;
}

// What a reduced loss's rounding errors add up to: sum_i |loss_i| / divisor (the sum itself may
// cancel).
double magnitude(const std::string& reduction, bool log_target) {
  const Array losses = run(CpuCapability::baseline, "none", log_target)[0];
  const double divisor = reduction == "mean"        ? double(losses.size())
                         : reduction == "batchmean" ? double(losses.shape()[0])
                                                    : 1.0;
  return double(xt::sum(xt::abs(losses))()) / divisor;
}
}  // namespace

TEST_SUITE("ops.kl_div_kernels") {
  TEST_CASE("kl_div: every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (const char* reduction : kReductions)
      for (bool log_target : {false, true}) {
        const auto expected = run(CpuCapability::baseline, reduction, log_target);
        for (CpuCapability set : available_cpu_capabilities()) {
          if (set == CpuCapability::reference) continue;
          CAPTURE(to_string(set));
          CAPTURE(reduction);
          CAPTURE(log_target);
          const auto got = run(set, reduction, log_target);
          for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
        }
      }
  }

  TEST_CASE(
      "kl_div: the reference kernels: the same bits without log_target, within 6 roundings with "
      "it") {
    CapabilityGuard guard;
    for (const char* reduction : kReductions)
      for (bool log_target : {false, true}) {
        CAPTURE(reduction);
        CAPTURE(log_target);
        const auto fast = run(CpuCapability::baseline, reduction, log_target);
        const auto ref = run(CpuCapability::reference, reduction, log_target);
        for (std::size_t i = 0; i < fast.size() && !log_target; ++i)
          CHECK(bit_equal(ref[i], fast[i]));
        if (log_target) CHECK_FALSE(bit_equal(ref[1], fast[1]));  // std::exp is not exp_f32
        const bool reduced = std::string(reduction) != "none";
        CHECK(
            within_roundings(ref[0], fast[0], 6, reduced ? magnitude(reduction, log_target) : 0.0));
        CHECK(within_roundings(ref[1], fast[1], 6));
      }
  }
}
