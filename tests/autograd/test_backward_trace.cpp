// tests/autograd/test_backward_trace.cpp: autograd::BackwardTrace reports a backward as the
// engine ran it: the entries newest first, each one's output and incoming gradient, every
// gradient its closure added (and the total after it), and nothing at all when no trace is on.
#include <doctest/doctest.h>

#include <optional>

#include <tapegrad/core.hpp>

using namespace tapegrad;

namespace {
std::uintptr_t id_of(const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.impl()); }
bool same(const Array& a, const Array& b) { return a.shape() == b.shape() && a == b; }
}  // namespace

TEST_SUITE("autograd.backward_trace") {
  TEST_CASE("without KeepOutputs, an output is freed once nothing reads it, and reported empty") {
    Parameter w(Array{0.5f, -1.0f, 2.0f});
    Tensor y = ops::mul(w, w);  // y * y saves y: its data stays until that entry runs
    Tensor z = ops::mul(y, y);  // sum reads only z's shape: z's data goes with its last handle
    Tensor loss = ops::sum(z);
    z = Tensor();
    y = Tensor();
    autograd::BackwardTrace trace;
    loss.backward();
    const auto& steps = trace.steps();
    REQUIRE(steps.size() == 3);
    CHECK(steps[1].op == "mul");
    CHECK_FALSE(steps[1].output_kept);  // z: nothing read it (sum reads its shape)
    CHECK(steps[1].output.size() == Array().size());
    CHECK_FALSE(steps[2].output_kept);  // y: y * y read it, and had run
    CHECK(same(w.grad(), Array{4.0f * 0.125f, -4.0f, 4.0f * 8.0f}));  // d(w^4) = 4 w^3
  }

  TEST_CASE("each entry appears in the engine's order with what it received and what it added") {
    Parameter w(Array{0.5f, -1.0f, 2.0f});
    Tensor x(Array{1.0f, 2.0f, 3.0f});
    std::optional<autograd::KeepOutputs> keep(std::in_place);  // every output, for steps[k].output
    Tensor y = ops::mul(w, x);                                 // #a: y = w x
    Tensor loss = ops::sum(y * y);                             // #b mul, #c sum
    keep.reset();
    const autograd::Tape tape = autograd::tape_of(loss);
    autograd::BackwardTrace trace;
    loss.backward();
    const auto& steps = trace.steps();
    REQUIRE(steps.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {  // the same entries, in the printed tape's order
      CHECK(steps[k].seq == tape.entries()[k].seq);
      CHECK(steps[k].op == tape.entries()[k].op);
      CHECK(steps[k].ran);
    }
    CHECK(steps[0].op == "sum");
    CHECK(same(steps[0].grad_output, Array(1.0f)));  // d loss / d loss
    const Array yv{0.5f, -2.0f, 6.0f};
    CHECK(same(steps[1].output, Array{0.25f, 4.0f, 36.0f}));  // y * y
    CHECK(same(steps[2].output, yv));
    // y * y adds dy * y into y twice (it is both operands), the total after each add.
    REQUIRE(steps[1].added.size() == 2);
    CHECK(steps[1].added[0].id == id_of(y));
    CHECK(same(steps[1].added[0].grad, yv));
    CHECK(same(steps[1].added[1].total, Array(2.0f * yv)));
    // The first entry adds dy * x into w, whose name and total .grad the step reports.
    REQUIRE(steps[2].added.size() == 1);
    CHECK(steps[2].added[0].id == id_of(w));
    CHECK(same(steps[2].grad_output, Array(2.0f * yv)));
    CHECK(same(steps[2].added[0].total, w.grad()));
    CHECK(steps[2].module.empty());
  }

  TEST_CASE("nothing is recorded without a trace, after stop(), or outside a backward") {
    Parameter w(Array{1.0f, 2.0f});
    {
      autograd::BackwardTrace trace;
      CHECK_THROWS_WITH_AS(autograd::BackwardTrace(), doctest::Contains("already recording"),
                           AutogradError);
      w.accumulate_grad(Array{1.0f, 1.0f}, "by hand");  // no backward is running
      CHECK(trace.steps().empty());
      trace.stop();
      ops::sum(w * w).backward();
      CHECK(trace.steps().empty());
    }
    autograd::BackwardTrace again;  // the first one let go of the thread
    ops::sum(w * w).backward();
    CHECK(again.steps().size() == 2);
  }
}
