// tests/autograd/test_backward_fn.cpp: BackwardFn, the tape entry's move-only closure holder.
// Small closures live inline, large ones on the heap; either way a move hands the closure over
// and every capture is destroyed exactly once.
#include <doctest/doctest.h>

#include <array>
#include <memory>
#include <utility>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::autograd::BackwardFn;
using tapegrad::testing::all_close;

TEST_SUITE("autograd.backward_fn") {

TEST_CASE("a small closure is called with the output's gradient and may rewrite it in place") {
  auto alive = std::make_shared<int>(0);
  BackwardFn f([alive, c = 3.0f](Array& dy) {
    for (float& v : dy) v *= c;
  });
  CHECK(static_cast<bool>(f));
  CHECK(alive.use_count() == 2);
  Array dy{1.f, 2.f};
  f(dy);
  CHECK(all_close(dy, Array{3.f, 6.f}));
}

TEST_CASE("a closure taking a const Array reference fits too, and says it only reads") {
  float seen = 0.0f;
  BackwardFn f([&seen](const Array& dy) { seen = dy(1); });
  CHECK(f.reads_only());
  Array dy{1.f, 7.f};
  f(dy);
  CHECK(seen == 7.f);
  const Array fixed{2.f, 9.f};
  f(fixed);                                         // the const call: no copy needed
  CHECK(seen == 9.f);
  std::array<float, 64> big{};                      // the same on the heap
  BackwardFn g([&seen, big](const Array& d) { seen = d(0) + big[0]; });
  CHECK(g.reads_only());
  g(fixed);
  CHECK(seen == 2.f);
}

TEST_CASE("a closure taking Array& may write its gradient, so it does not claim to only read") {
  BackwardFn f([](Array& dy) { dy(0) = 0.f; });
  CHECK_FALSE(f.reads_only());
  CHECK_FALSE(BackwardFn().reads_only());
}

TEST_CASE("a closure larger than the inline room goes to the heap and still works") {
  auto alive = std::make_shared<int>(0);
  std::array<float, 64> big{};
  big[63] = 2.f;
  BackwardFn f([alive, big](Array& dy) { dy(0) *= big[63]; });
  CHECK(alive.use_count() == 2);
  Array dy{5.f};
  f(dy);
  CHECK(dy(0) == 10.f);
}

TEST_CASE("moving hands the closure over and every capture is released exactly once") {
  for (bool large : {false, true}) {
    CAPTURE(large);
    auto alive = std::make_shared<int>(0);
    {
      std::array<float, 64> big{};
      BackwardFn a = large ? BackwardFn([alive, big](Array& dy) { dy(0) += big[0] + 1.f; })
                           : BackwardFn([alive](Array& dy) { dy(0) += 1.f; });
      BackwardFn b(std::move(a));
      CHECK_FALSE(static_cast<bool>(a));   // NOLINT(bugprone-use-after-move): the moved-from state is the point
      CHECK(static_cast<bool>(b));
      CHECK(alive.use_count() == 2);
      BackwardFn c([alive](Array&) {});
      CHECK(alive.use_count() == 3);
      c = std::move(b);                      // c's own closure is destroyed, b's moves in
      CHECK(alive.use_count() == 2);
      Array dy{0.f};
      c(dy);
      CHECK(dy(0) == 1.f);
    }
    CHECK(alive.use_count() == 1);
  }
}

}
