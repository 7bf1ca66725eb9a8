// tests/autograd/test_profiler.cpp: autograd::Profiler's table: the calls per op and pass for a
// known graph, the shares adding up to the profiled time, the FLOPs and bytes it counts, the
// products run in bf16 marked apart, and that nothing is timed unless a Profiler is on.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <utility>

#include <tapegrad/core.hpp>

using namespace tapegrad;

namespace {
using Key = std::pair<std::string, bool>;  // (op, backward)

std::map<Key, autograd::Profiler::Row> by_op(autograd::Profiler& prof) {
  std::map<Key, autograd::Profiler::Row> rows;
  for (const autograd::Profiler::Row& r : prof.rows()) rows[{r.op, r.backward}] = r;
  return rows;
}

// loss = sum(x * x + x): three ops, each recorded once and run once by backward.
void small_step(const Tensor& x) {
  Tensor loss = ops::sum(ops::add(ops::mul(x, x), x));
  loss.backward();
}
}  // namespace

TEST_SUITE("autograd.profiler") {
  TEST_CASE("no Profiler is on unless one is made, and one stops timing when stopped") {
    CHECK_FALSE(autograd::Profiler::enabled());
    Tensor x(Array{1.f, 2.f, 3.f}, true);
    autograd::Profiler prof(autograd::MachinePeak{1, 1});
    CHECK(autograd::Profiler::enabled());
    small_step(x);
    prof.stop();
    CHECK_FALSE(autograd::Profiler::enabled());
    small_step(x);  // not counted
    CHECK(by_op(prof)[{"mul", false}].calls == 1);
  }

  TEST_CASE("the table counts each op's forward and backward calls for a known graph") {
    Tensor x(Array{1.f, 2.f, 3.f}, true);
    autograd::Profiler prof(autograd::MachinePeak{1, 1});
    small_step(x);
    small_step(x);
    auto rows = by_op(prof);
    for (const char* op : {"mul", "add", "sum"}) {
      CHECK(rows[{op, false}].calls == 2);
      CHECK(rows[{op, true}].calls == 2);
    }
    CHECK(rows.size() == 7);  // three ops, two passes, and the time outside recorded ops
    CHECK(rows.count({"(outside recorded ops)", false}) == 1);
    std::ostringstream os;
    os << prof;
    CHECK(os.str().find("mul") != std::string::npos);
    CHECK(os.str().find("backward") != std::string::npos);
  }

  TEST_CASE("the shares add up to 100 % of the profiled time") {
    Tensor x(Array::from_shape({1000}), true);
    autograd::Profiler prof(autograd::MachinePeak{1, 1});
    for (int i = 0; i < 20; ++i) small_step(x);
    const auto rows = prof.rows();
    double sum = 0;
    for (const auto& r : rows) {
      CHECK(r.seconds >= 0);
      sum += r.seconds;
    }
    CHECK(sum == doctest::Approx(prof.total_seconds()).epsilon(1e-6));
    CHECK(prof.total_seconds() > 0);
  }

  TEST_CASE("matrix products count 2 FLOPs per multiply-add, other ops the bytes they touch") {
    Tensor a(Array::from_shape({2, 3}), true), b(Array::from_shape({3, 4}), true);
    Tensor x(Array{1.f, 2.f, 3.f}, true);
    autograd::Profiler prof(autograd::MachinePeak{1, 1});
    ops::sum(ops::matmul(a, b)).backward();
    ops::sum(ops::mul(x, x)).backward();
    auto rows = by_op(prof);
    CHECK(rows[{"matmul", false}].flops == 2.0 * 2 * 4 * 3);
    CHECK(rows[{"matmul", true}].flops == 2 * 2.0 * 2 * 4 * 3);  // one product per input gradient
    CHECK(rows[{"matmul", false}].bytes == 0);
    CHECK(rows[{"mul", false}].bytes == 4.0 * (3 + 3 + 3));  // both inputs and the output
    CHECK(rows[{"mul", false}].flops == 0);
  }

  TEST_CASE("products run inside an autocast::bf16 scope have rows of their own, marked bf16") {
    Tensor a(Array::from_shape({2, 3}), true), b(Array::from_shape({3, 4}), true);
    Tensor x(Array{1.f, 2.f, 3.f}, true);
    autograd::Profiler prof(autograd::MachinePeak{1, 1});
    ops::sum(ops::matmul(a, b)).backward();  // float32
    {
      autocast::bf16 mixed;
      ops::sum(ops::matmul(a, b)).backward();
      ops::sum(ops::mul(x, x)).backward();  // not a product: float32 in the scope too
    }
    auto rows = by_op(prof);
    CHECK(rows[{"matmul", false}].calls == 1);
    CHECK(rows[{"matmul [bf16]", false}].calls == 1);
    CHECK(rows[{"matmul [bf16]", true}].calls == 1);
    CHECK(rows[{"matmul [bf16]", false}].flops == 2.0 * 2 * 4 * 3);
    CHECK(rows[{"mul", false}].calls == 1);
    CHECK(rows.count({"mul [bf16]", false}) == 0);
  }

  TEST_CASE("a second Profiler on the same thread is refused") {
    autograd::Profiler prof(autograd::MachinePeak{1, 1});
    CHECK_THROWS_WITH_AS(autograd::Profiler(autograd::MachinePeak{1, 1}),
                         doctest::Contains("a Profiler is already on on this thread"),
                         AutogradError);
    CHECK(autograd::Profiler::enabled());  // the first one is still on
  }
}
