// tests/autograd/test_entry.cpp: the closure an entry keeps, written the one way:
// `[captures](Array dy) { ... }`. It is called once per backward with the output's gradient,
// which it may reuse, and what it captured lives exactly as long as the entry.
#include <doctest/doctest.h>

#include <array>
#include <memory>
#include <utility>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

namespace {
// y = 3 x, recorded with a closure that reuses dy's buffer and holds `alive` while it exists.
Tensor triple(const Tensor& x, std::shared_ptr<int> alive) {
  Tensor y(Array(x.data() * 3.f));
  autograd::record("triple", y, {x}, {}, [x, alive](Array dy) {
    for (float& v : dy) v *= 3.f;
    x.accumulate_grad(std::move(dy), "triple");
  });
  return y;
}
}  // namespace

TEST_SUITE("autograd.entry") {
  TEST_CASE("a closure takes the output's gradient by value and may hand its buffer on") {
    Tensor x(Array{1.f, 2.f}, true);
    Tensor y = triple(x, nullptr);
    Array seed{1.f, 10.f};
    y.backward(seed);
    CHECK(all_close(x.grad(), Array{3.f, 30.f}));
    CHECK(all_close(seed, Array{1.f, 10.f}));  // the caller's seed is copied, never rewritten
  }

  TEST_CASE("only a closure taking Array by value is a backward closure") {
    auto by_value = [](Array) {};
    auto by_ref = [](Array&) {};
    auto by_const_ref = [](const Array&) {};
    auto generic = [](auto) {};
    CHECK(autograd::detail::is_backward_closure<decltype(by_value)>());
    CHECK_FALSE(autograd::detail::is_backward_closure<decltype(by_ref)>());
    CHECK_FALSE(autograd::detail::is_backward_closure<decltype(by_const_ref)>());
    CHECK_FALSE(autograd::detail::is_backward_closure<decltype(generic)>());
  }

  TEST_CASE("what a closure captured is released when backward consumes its entry") {
    auto alive = std::make_shared<int>(0);
    Tensor x(Array{1.f}, true);
    Tensor y = triple(x, alive);
    CHECK(alive.use_count() == 2);
    y.backward(Array{1.f});
    CHECK(alive.use_count() == 1);  // consumed: the closure is gone
    CHECK(x.grad()(0) == 3.f);
  }

  TEST_CASE("what a closure captured is released when its output dies without a backward") {
    auto alive = std::make_shared<int>(0);
    Tensor x(Array{1.f}, true);
    const std::size_t before = autograd::live_entries();
    {
      Tensor y = triple(x, alive);
      CHECK(autograd::live_entries() == before + 1);
      CHECK(alive.use_count() == 2);
    }
    CHECK(autograd::live_entries() == before);
    CHECK(alive.use_count() == 1);
  }

  TEST_CASE("a closure of any size fits, and retain_graph keeps it for another backward") {
    auto alive = std::make_shared<int>(0);
    std::array<float, 256> big{};
    big[255] = 2.f;
    Tensor x(Array{5.f}, true);
    Tensor y(Array{10.f});
    autograd::record("big", y, {x}, {}, [x, big, alive](Array dy) {
      for (float& v : dy) v *= big[255];
      x.accumulate_grad(std::move(dy));
    });
    y.backward(Array{1.f}, /*retain_graph=*/true);
    CHECK(alive.use_count() == 2);
    y.backward(Array{1.f});
    CHECK(x.grad()(0) == 4.f);
    CHECK(alive.use_count() == 1);
  }

}  // TEST_SUITE
