// tests/kernels/test_reduce.cpp: the reductions on every kernel set this CPU can run. The fast
// sets and the reference add every sum in the same order (in double, in the order of the elements
// in memory; sum_to_shape's in float, in the order of the summed axis), so all give the same bits.
// Linear's bias gradient, a column sum on these kernels, is compared here too.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"
#include "kernel_set_compare.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;

namespace {
// Values with a mean far from 0 (where the order of additions shows), ties and a NaN in row 1.
Array reduce_input() {
  Array x = testing::input({6, 5, 37}, 21, false).data() * 3.0f + 1000.0f;
  x(2, 3, 4) = x(2, 1, 4);  // a tie along dim 1
  x(1, 2, 7) = std::numeric_limits<float>::quiet_NaN();
  return x;
}

// Every reduction's values and gradients on the set, in a fixed order.
std::vector<Array> run(CpuCapability set) {
  set_cpu_capability(set);
  std::vector<Array> out;
  Tensor x(reduce_input(), true);
  Tensor finite(Array(testing::input({6, 5, 37}, 21, false).data() * 3.0f + 1000.0f), true);
  auto add = [&](const Tensor& y) {
    out.push_back(y.data());
    y.backward(xt::ones<float>(y.shape()));
    out.push_back(finite.grad());
    finite.zero_grad();
  };
  add(ops::sum(finite));
  add(ops::mean(finite));
  for (const std::vector<std::int64_t>& dims :
       std::vector<std::vector<std::int64_t>>{{0}, {1}, {2}, {0, 2}, {-1, -2}, {}}) {
    add(ops::sum(finite, dims, false));
    add(ops::mean(finite, dims, true));
  }
  for (std::int64_t dim : {0, 1, 2}) {
    add(ops::max(finite, dim, false));
    out.push_back(ops::max(x, dim, false).data());  // the NaN's column
    IndexArray idx = ops::argmax(x, dim, false);
    out.push_back(Array(xt::cast<float>(idx)));
  }
  out.push_back(ops::max(x).data());
  add(ops::max(finite));
  Tensor b(testing::input({5, 1}, 22, false).data(), true);  // sum_to_shape over dims 0 and 2
  (finite + b).backward(xt::ones<float>(finite.shape()));
  out.push_back(b.grad());
  // linear's bias gradient is the column sum of dy over its 30 rows, on the same kernels; rows 0
  // and 2 of dy are +-3e16, so that a double sum in another order than the rows' rounds apart
  Tensor w(testing::input({7, 37}, 23, false).data(), true);
  Tensor bias(testing::input({7}, 24, false).data(), true);
  Tensor y = ops::linear(finite, w, bias);
  Array dy = testing::input(y.shape(), 25, false).data() * 5.0f + 1000.0f;
  for (std::size_t j = 0; j < 7; ++j) {
    dy(0, 0, j) = 3e16f;
    dy(0, 2, j) = -3e16f;
  }
  y.backward(std::move(dy));
  out.push_back(bias.grad());
  return out;
}
}  // namespace

TEST_SUITE("ops.reduce_kernels") {
  TEST_CASE("every kernel set, the reference included, gives the same bits") {
    CapabilityGuard guard;
    const auto want = run(CpuCapability::baseline);
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      const auto got = run(set);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(bit_equal(got[i], want[i]));
      }
    }
  }

  TEST_CASE("the kernels' results are the sums and maxima they name") {
    CapabilityGuard guard;
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      const Tensor x(Array{{1.0f, 5.0f, 5.0f}, {-2.0f, 0.5f, 3.0f}});
      CHECK(ops::sum(x).data()() == 12.5f);
      CHECK(bit_equal(ops::sum(x, 0, false).data(), Array{-1.0f, 5.5f, 8.0f}));
      CHECK(bit_equal(ops::max(x, 1, false).data(), Array{5.0f, 3.0f}));
      CHECK(ops::argmax(x, 1, false) == IndexArray{1, 2});
      CHECK(ops::max(x).data()() == 5.0f);
    }
  }
}
