// tests/kernels/optim/test_clip_grad.cpp: clip_grad_norm_ on every kernel set this CPU can run.
// The fast sets give the same bits; the reference sums the 2-norm's squares one after another where
// the fast kernel uses four lanes: the total norm a few double roundings apart, the scaled gradients
// at most one float rounding (the bound: docs/semantics.md#kernel-sets).
#include <doctest/doctest.h>

#include <cmath>
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
struct Clipped {
  double total;
  std::vector<Array> grads;
};

// Two dense gradients and a row-sparse one, clipped to norm 1 on the set.
Clipped run(CpuCapability set, double norm_type) {
  set_cpu_capability(set);
  std::vector<Parameter> ps{Parameter(Array::from_shape({1001})),
                            Parameter(Array::from_shape({7, 3})),
                            Parameter(Array::from_shape({6, 4}))};
  ps[0].set_grad(input({1001}, 1, false).data() * 3.0f + 1.0f);
  ps[1].set_grad(input({7, 3}, 2, false).data());
  ps[2].accumulate_grad(RowSparseGrad{IndexArray{5, 0, 5}, input({3, 4}, 3, false).data(), {6, 4}});
  const double total = clip_grad_norm_(ps, 1.0, norm_type);
  Clipped out{total, {}};
  for (const Parameter& p : ps)
    out.grads.push_back(p.grad_is_sparse() ? p.sparse_grad().to_dense() : p.grad());
  return out;
}

const double kNorms[] = {2.0, 1.0, 3.0, 0.0, INFINITY, -INFINITY};
}  // namespace

TEST_SUITE("optim.clip_grad_kernels") {
  TEST_CASE("every fast kernel set gives the same bits for every norm type") {
    CapabilityGuard guard;
    for (double norm_type : kNorms) {
      const Clipped expected = run(CpuCapability::baseline, norm_type);
      for (CpuCapability set : available_cpu_capabilities()) {
        if (set == CpuCapability::reference) continue;
        CAPTURE(to_string(set));
        CAPTURE(norm_type);
        const Clipped got = run(set, norm_type);
        CHECK(got.total == expected.total);
        for (std::size_t i = 0; i < got.grads.size(); ++i)
          CHECK(bit_equal(got.grads[i], expected.grads[i]));
      }
    }
  }

  TEST_CASE(
      "the reference norms agree with the fast ones: the total within 1e-12, the grads 1 "
      "rounding") {
    CapabilityGuard guard;
    double worst_total = 0.0, worst_grads = 0.0;
    for (double norm_type : kNorms) {
      CAPTURE(norm_type);
      const Clipped fast = run(CpuCapability::baseline, norm_type);
      const Clipped ref = run(CpuCapability::reference, norm_type);
      const double total_apart = std::abs(ref.total - fast.total) / fast.total;
      CHECK(total_apart <= 1e-12);
      worst_total = std::max(worst_total, total_apart);
      for (std::size_t i = 0; i < fast.grads.size(); ++i) {
        const double apart = roundings_apart_of_largest(ref.grads[i], fast.grads[i]);
        CHECK(apart <= 1.0);
        worst_grads = std::max(worst_grads, apart);
      }
    }
    MESSAGE("reference vs fast: total norm relative " << worst_total << ", grads in roundings "
                                                      << worst_grads);
  }
}
