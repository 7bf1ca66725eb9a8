// tests/kernels/optim/test_sgd.cpp: SGD's update on every kernel set this CPU can run. The fast
// sets and the reference do the same float operations in the same order: the same bits
// (docs/semantics.md#kernel-sets).
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
// θ and the momentum buffer after 5 dense steps, then θ after 2 row-sparse steps (no momentum).
std::vector<Array> run(CpuCapability set, const SGDOptions& options) {
  set_cpu_capability(set);
  Parameter p(input({7, 9}, 1, false).data());
  SGD opt({p}, options);
  for (std::uint64_t s = 0; s < 5; ++s) {
    p.set_grad(input({7, 9}, 10 + s, false).data());
    opt.step();
  }
  std::vector<Array> out{p.data()};
  if (opt.state(p)) out.push_back(opt.state(p)->momentum_buffer);
  Parameter q(input({5, 3}, 2, false).data());
  SGD sparse({q}, SGDOptions(0.1).maximize(options.maximize()));
  for (std::uint64_t s = 0; s < 2; ++s) {
    q.zero_grad();
    q.accumulate_grad(
        RowSparseGrad{IndexArray{4, 1, 4}, input({3, 3}, 20 + s, false).data(), {5, 3}});
    sparse.step();
  }
  out.push_back(q.data());
  return out;
}

std::vector<SGDOptions> variants() {
  std::vector<SGDOptions> out;
  for (bool maximize : {false, true}) {
    out.push_back(SGDOptions(0.1).maximize(maximize));
    out.push_back(SGDOptions(0.1).weight_decay(0.01).maximize(maximize));
    out.push_back(
        SGDOptions(0.1).momentum(0.9).dampening(0.3).weight_decay(0.01).maximize(maximize));
    out.push_back(SGDOptions(0.1).momentum(0.9).nesterov(true).maximize(maximize));
  }
  return out;
}
}  // namespace

TEST_SUITE("optim.sgd_kernels") {
  TEST_CASE("every kernel set, the reference included, gives the same bits for every SGD variant") {
    CapabilityGuard guard;
    for (const SGDOptions& options : variants()) {
      const auto expected = run(CpuCapability::baseline, options);
      for (CpuCapability set : available_cpu_capabilities()) {
        CAPTURE(to_string(set));
        CAPTURE(options.momentum());
        CAPTURE(options.nesterov());
        const auto got = run(set, options);
        REQUIRE(got.size() == expected.size());
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }
}
