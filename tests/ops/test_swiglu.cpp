// tests/ops/test_swiglu.cpp: ops::swiglu(gate, up), LLaMA's silu(gate) * up in one op: the bits of
// the two ops it replaces (values and both gradients, the infinities and NaN included), the
// gradient against finite differences, what it saves, and its error.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include <tapegrad/autograd/tape.hpp>
#include <tapegrad/core.hpp>
#include <tapegrad/ops/activation.hpp>
#include <tapegrad/ops/elementwise.hpp>

#include "../helpers.hpp"

using namespace tapegrad;

namespace {
bool same_bits(const Array& a, const Array& b) {
  if (a.shape() != b.shape()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint32_t>(a.data()[i]) != std::bit_cast<std::uint32_t>(b.data()[i]))
      return false;
  return true;
}
}  // namespace

TEST_SUITE("ops.swiglu") {
  TEST_CASE("swiglu gives the bits of silu(gate) * up, forward and backward, tails included") {
    const float inf = std::numeric_limits<float>::infinity(),
                nan = std::numeric_limits<float>::quiet_NaN();
    Array g = testing::input({4, 37}, 5).data() * 4.0f;  // 37: a loop tail on every vector width
    Array u = testing::input({4, 37}, 6).data();
    const std::vector<float> tails{-inf, inf, nan, -200.0f, 200.0f, 0.0f, -0.0f, 90.0f};
    for (std::size_t i = 0; i < tails.size(); ++i) {
      g.data()[i] = tails[i];
      u.data()[tails.size() + i] = tails[i];
    }
    const Array dy = testing::input({4, 37}, 7).data();
    Tensor g1(g, true), u1(u, true), g2(g, true), u2(u, true);
    Tensor fused = ops::swiglu(g1, u1);
    Tensor apart = ops::silu(g2) * u2;
    CHECK(same_bits(fused.data(), apart.data()));
    fused.backward(dy);
    apart.backward(dy);
    CHECK(same_bits(g1.grad(), g2.grad()));
    CHECK(same_bits(u1.grad(), u2.grad()));
  }

  TEST_CASE("swiglu's gradients match finite differences") {
    testing::check_gradients([](const std::vector<Tensor>& t) { return ops::swiglu(t[0], t[1]); },
                             {testing::input({3, 5}, 11), testing::input({3, 5}, 12)});
  }

  TEST_CASE(
      "swiglu saves gate and up, not silu(gate), and a side that needs no gradient gets none") {
    Tensor g(Array{1.0f, -2.0f}, true);
    Tensor u(Array{3.0f, 0.5f});
    Tensor y = ops::swiglu(g, u);
    const autograd::Tape tape = autograd::tape_of(y);
    REQUIRE(tape.size() == 1);
    CHECK(tape.entries()[0].op == "swiglu");
    CHECK(tape.entries()[0].saved.size() == 2);
    y.backward(Array{1.0f, 1.0f});
    CHECK(g.has_grad());
    CHECK_FALSE(u.has_grad());
  }

  TEST_CASE("swiglu refuses gate and up of different shapes, naming both") {
    Tensor g(Array::from_shape({2, 3}), true), u(Array::from_shape({3, 2}));
    CHECK_THROWS_WITH_AS(ops::swiglu(g, u),
                         "swiglu: expected gate and up of one shape, got (2, 3) and (3, 2)",
                         ShapeError);
  }
}
