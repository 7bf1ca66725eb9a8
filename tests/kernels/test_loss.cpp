// tests/kernels/test_loss.cpp: cross_entropy on every kernel set this CPU can run. The fast
// sets (baseline, avx2, avx512: one source compiled three times) give the same bits; the reference
// kernels call std::exp where the fast ones call exp_f32, and subtract the one-hot before scaling
// by the gradient, so they differ by a few float roundings (the bound: docs/semantics.md#kernel-sets).
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
struct Case {
  std::size_t N, C;
  const char* reduction;
};

// Every 5th row ignored (ignore_index -100); the others' targets spread over the classes.
IndexArray targets(std::size_t N, std::size_t C) {
  IndexArray t = IndexArray::from_shape({N});
  for (std::size_t i = 0; i < N; ++i) t(i) = i % 5 == 2 ? -100 : std::int64_t((i * 7 + 3) % C);
  return t;
}

// The loss and dlogits of cross_entropy on the set, for logits spread over about +-9 (large enough
// that the row max matters, small enough that no probability underflows to 0), and g: per row, the
// gradient of the result with respect to the row's loss.
std::vector<Array> run(CpuCapability set, const Case& c) {
  set_cpu_capability(set);
  Tensor x(input({c.N, c.C}, c.N + c.C).data() * 3.0f, true);
  const IndexArray t = targets(c.N, c.C);
  Tensor loss = ops::cross_entropy(x, t, ops::CrossEntropyOptions().reduction(c.reduction));
  const std::string reduction = c.reduction;
  Array g = input({c.N}, 5, false).data();
  if (reduction == "none") {
    loss.backward(g);
  } else {
    loss.backward();
    const std::size_t count = std::count_if(t.begin(), t.end(), [](auto i) { return i >= 0; });
    g.fill(reduction == "sum" ? 1.0f : 1.0f / float(count));
  }
  return {loss.data(), x.grad(), g};
}

// |a - b| within `ulps` float roundings of max(|a|, |b|, floor[i / row])
bool within_roundings(const Array& a, const Array& b, double ulps, const Array& floor,
                      std::size_t row = 1) {
  bool ok = a.shape() == b.shape();
  for (std::size_t i = 0; ok && i < a.size(); ++i) {
    const double x = a.flat(i), y = b.flat(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double scale =
        std::max({std::abs(x), std::abs(y), double(std::abs(floor.flat(i / row)))});
    ok = std::abs(x - y) <= ulps * 0x1p-24 * scale;
    if (!ok)
      MESSAGE("at ", i, ": ", x, " vs ", y, ", off by ", std::abs(x - y) / (0x1p-24 * scale),
              " roundings");
  }
  return ok;
}

const std::vector<Case> kCases = {{4, 5, "mean"},    {130, 64, "mean"}, {130, 64, "sum"},
                                  {130, 64, "none"}, {9, 700, "mean"},  {3000, 24, "mean"},
                                  {2, 1, "none"},    {5, 3, "none"}};
}  // namespace

TEST_SUITE("ops.loss_kernels") {
  TEST_CASE("cross_entropy: every fast kernel set gives the same bits, forward and backward") {
    CapabilityGuard guard;
    for (const Case& c : kCases) {
      const auto expected = run(CpuCapability::baseline, c);
      for (CpuCapability set : available_cpu_capabilities()) {
        if (set == CpuCapability::reference) continue;
        CAPTURE(to_string(set));
        CAPTURE(c.N);
        CAPTURE(c.C);
        CAPTURE(c.reduction);
        const auto got = run(set, c);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(bit_equal(got[i], expected[i]));
      }
    }
  }

  TEST_CASE(
      "cross_entropy: the reference kernels agree with the fast ones within 4 float roundings") {
    CapabilityGuard guard;
    for (const Case& c : kCases) {
      CAPTURE(c.N);
      CAPTURE(c.C);
      CAPTURE(c.reduction);
      const auto fast = run(CpuCapability::baseline, c);
      const auto ref = run(CpuCapability::reference, c);
      // the loss: of max(|loss|, 1) (log_sum's error does not shrink with the loss); dlogits: of
      // max(|dlogit|, |g|) (near the target, softmax - 1 cancels)
      CHECK(within_roundings(ref[0], fast[0], 4, Array(xt::ones<float>(ref[0].shape()))));
      CHECK(within_roundings(ref[1], fast[1], 4, fast[2], c.C));
    }
  }

  TEST_CASE("cross_entropy: all rows ignored: the mean is NaN and the gradient 0 on every set") {
    CapabilityGuard guard;
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      Tensor x(input({3, 4}, 1).data(), true);
      Tensor loss = ops::cross_entropy(x, IndexArray{-100, -100, -100});
      CHECK(std::isnan(loss.item()));
      loss.backward();
      CHECK(bit_equal(x.grad(), Array(xt::zeros<float>({3, 4}))));
    }
  }

  TEST_CASE(
      "cross_entropy: forward and backward run the kernels of the set in use when the op ran") {
    CapabilityGuard guard;
    // recorded on the reference set, differentiated after switching: the backward is the
    // reference's too, so the gradient is the reference's whatever the set at backward time
    set_cpu_capability(CpuCapability::reference);
    Tensor x(input({130, 64}, 1).data() * 3.0f, true);
    Tensor loss = ops::cross_entropy(x, targets(130, 64));
    set_cpu_capability(available_cpu_capabilities().back());
    loss.backward();
    const Array dx_switched = x.grad();
    x.zero_grad();
    set_cpu_capability(CpuCapability::reference);
    ops::cross_entropy(x, targets(130, 64)).backward();
    CHECK(bit_equal(x.grad(), dx_switched));
    // and the reference's gradient is not the fast one's, or this test could not fail
    x.zero_grad();
    set_cpu_capability(CpuCapability::baseline);
    ops::cross_entropy(x, targets(130, 64)).backward();
    CHECK_FALSE(bit_equal(x.grad(), dx_switched));
  }
}
