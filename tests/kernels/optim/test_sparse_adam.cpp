// tests/kernels/optim/test_sparse_adam.cpp: SparseAdam's update on every kernel set this CPU can
// run. The fast sets give the same bits; the reference writes the moments as β·m + (1 − β)·g where
// the fast kernel writes m + (1 − β)(g − m), a few float roundings apart (the bound:
// docs/semantics.md#kernel-sets).
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
// θ, m, v of a (50, 33) table after 6 steps whose gradients touch some rows, one twice.
std::vector<Array> run(CpuCapability set, bool maximize) {
  set_cpu_capability(set);
  Parameter p(input({50, 33}, 1, false).data());
  SparseAdam opt({p}, SparseAdamOptions(0.01).maximize(maximize));
  for (std::uint64_t s = 0; s < 6; ++s) {
    p.zero_grad();
    const std::int64_t r = std::int64_t(s);
    p.accumulate_grad(RowSparseGrad{
        IndexArray{r, 7, 20 + r, 7, 49}, input({5, 33}, 10 + s, false).data(), {50, 33}});
    opt.step();
  }
  const SparseAdamState& s = *opt.state(p);
  return {p.data(), s.exp_avg, s.exp_avg_sq};
}
}  // namespace

TEST_SUITE("optim.sparse_adam_kernels") {
  TEST_CASE("every fast kernel set gives the same bits") {
    CapabilityGuard guard;
    for (bool maximize : {false, true}) {
      const auto expected = run(CpuCapability::baseline, maximize);
      for (CpuCapability set : available_cpu_capabilities()) {
        if (set == CpuCapability::reference) continue;
        CAPTURE(to_string(set));
        const auto got = run(set, maximize);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE("the reference SparseAdam kernel agrees with the fast one within 4 float roundings") {
    CapabilityGuard guard;
    double worst = 0.0;
    for (bool maximize : {false, true}) {
      const auto fast = run(CpuCapability::baseline, maximize);
      const auto ref = run(CpuCapability::reference, maximize);
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
