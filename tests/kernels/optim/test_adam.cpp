// tests/kernels/optim/test_adam.cpp: Adam's and AdamW's update on every kernel set this CPU can
// run. The fast sets (one source compiled per set) give the same bits; the reference kernel writes
// PyTorch's documented algorithm, which differs from the fast order by a few float roundings (the
// bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <vector>

#include "../../helpers.hpp"
#include "../../optim/kernel_sets.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::input;
using tapegrad::testing::roundings_apart_of_largest;

namespace {
struct Variant {
  bool adamw, amsgrad, maximize;
  double weight_decay;
};

// θ, m, v (and vmax) after 6 steps of random gradients on the set (40 000 elements: the kernel
// splits them over threads).
std::vector<Array> run(CpuCapability set, const Variant& c, std::size_t n) {
  set_cpu_capability(set);
  Parameter p(input({n}, 1, false).data());
  std::unique_ptr<Optimizer> opt;
  if (c.adamw)
    opt = std::make_unique<AdamW>(
        std::vector<Parameter>{p},
        AdamWOptions(0.01).weight_decay(c.weight_decay).amsgrad(c.amsgrad).maximize(c.maximize));
  else
    opt = std::make_unique<Adam>(
        std::vector<Parameter>{p},
        AdamOptions(0.01).weight_decay(c.weight_decay).amsgrad(c.amsgrad).maximize(c.maximize));
  for (std::uint64_t s = 0; s < 6; ++s) {
    p.set_grad(input({n}, 10 + s, false).data() * float(1 + s % 3));
    opt->step();
  }
  const AdamState& s =
      c.adamw ? *static_cast<AdamW&>(*opt).state(p) : *static_cast<Adam&>(*opt).state(p);
  std::vector<Array> out{p.data(), s.exp_avg, s.exp_avg_sq};
  if (s.max_exp_avg_sq) out.push_back(*s.max_exp_avg_sq);
  return out;
}

std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (bool adamw : {false, true})
    for (bool amsgrad : {false, true})
      for (bool maximize : {false, true})
        for (double wd : {0.0, 0.1}) out.push_back({adamw, amsgrad, maximize, wd});
  return out;
}
}  // namespace

TEST_SUITE("optim.adam_kernels") {
  TEST_CASE("every fast kernel set gives the same bits for every Adam and AdamW variant") {
    CapabilityGuard guard;
    for (const Variant& c : variants())
      for (std::size_t n : {std::size_t{21}, std::size_t{40000}}) {
        const auto expected = run(CpuCapability::baseline, c, n);
        for (CpuCapability set : available_cpu_capabilities()) {
          if (set == CpuCapability::reference) continue;
          CAPTURE(to_string(set));
          CAPTURE(c.adamw);
          CAPTURE(c.amsgrad);
          const auto got = run(set, c, n);
          REQUIRE(got.size() == expected.size());
          for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
        }
      }
  }

  TEST_CASE("the reference Adam kernel agrees with the fast one within 4 float roundings") {
    CapabilityGuard guard;
    double worst = 0.0;
    for (const Variant& c : variants()) {
      CAPTURE(c.adamw);
      CAPTURE(c.amsgrad);
      CAPTURE(c.maximize);
      CAPTURE(c.weight_decay);
      const auto fast = run(CpuCapability::baseline, c, 40000);
      const auto ref = run(CpuCapability::reference, c, 40000);
      REQUIRE(ref.size() == fast.size());
      for (std::size_t i = 0; i < fast.size(); ++i) {
        const double apart = roundings_apart_of_largest(ref[i], fast[i]);
        CHECK(apart <= 4.0);
        worst = std::max(worst, apart);
      }
    }
    MESSAGE("reference vs fast, float roundings of the largest magnitude: " << worst);
    CHECK(worst > 0.0);  // the orders differ: were the results equal, the reference ran fast code
  }
}
