// tests/kernels/optim/test_sparse_adam.cpp: SparseAdam's update on every kernel set this CPU can
// run. Every set, the reference included, gives the same bits: all write the moments as PyTorch's
// code does, m + (1 − β)(g − m) (docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <vector>

#include "../../helpers.hpp"
#include "../../optim/kernel_sets.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;
using tapegrad::testing::input;

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
  TEST_CASE("every kernel set, the reference included, gives the same bits") {
    CapabilityGuard guard;
    for (bool maximize : {false, true}) {
      const auto expected = run(CpuCapability::reference, maximize);
      for (CpuCapability set : available_cpu_capabilities()) {
        CAPTURE(to_string(set));
        const auto got = run(set, maximize);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }
}
