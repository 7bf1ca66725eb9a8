// tests/docs/test_my_silu.cpp: the test of the out-of-tree layer of examples/README.md ("Writing a
// layer out of tree"), my_layers/silu.hpp beside it, as a project of yours would write it (there:
// tests/test_silu.cpp, with include/ on the include path). Here the unit_tests program runs it.
#include <doctest/doctest.h>
#include "my_layers/silu.hpp"
using namespace tapegrad;

TEST_SUITE("my.silu") {
TEST_CASE("silu passes gradcheck") {
  Generator gen(0);
  Tensor x(randn({3, 4}, &gen), true);
  const GradcheckResult r = gradcheck([](const std::vector<Tensor>& t) { return my::silu(t[0]); }, {x});
  CHECK_MESSAGE(r.ok, r.message);
}
TEST_CASE("ScaledSiLU names itself in a shape error") {
  my::ScaledSiLU layer(4);
  CHECK_THROWS_WITH_AS(layer.forward(Tensor(Array(xt::ones<float>({2, 3})))),
                       "ScaledSiLU: expected x of shape (*, 4), got (2, 3)", ShapeError);
}
TEST_CASE("ScaledSiLU is silu times its gain, and the gain receives a gradient") {
  Generator gen(1);
  my::ScaledSiLU layer(4);
  Tensor x(randn({2, 4}, &gen), true);
  Tensor y = layer.forward(x);
  CHECK(y.data() == my::silu(x).data());  // the gain starts at 1
  ops::sum(y).backward();
  CHECK(layer.weight.has_grad());
  CHECK(x.has_grad());
}
}
