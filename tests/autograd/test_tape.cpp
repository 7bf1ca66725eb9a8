// tests/autograd/test_tape.cpp: the tape as a learner sees it: entries newest first, what
// backward replays and consumes, printing. The engine's ownership rules: test_engine.cpp.
#include <doctest/doctest.h>

#include <sstream>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

TEST_SUITE("autograd.tape") {
  TEST_CASE(
      "each op run with an input that requires grad adds one entry, and tape() lists newest first") {
    REQUIRE(autograd::tape().empty());
    Tensor w(Array{1.f, 2.f, 3.f}, true);
    Tensor c(Array{1.f, 1.f, 1.f});
    Tensor y = ops::mul(w, c);
    Tensor z = ops::add(y, 1.0);
    Tensor loss = ops::sum(z);
    REQUIRE(autograd::tape().size() == 3);
    CHECK(autograd::tape().entries()[0].op == "sum");
    CHECK(autograd::tape().entries()[1].op == "add");
    CHECK(autograd::tape().entries()[2].op == "mul");
    CHECK(autograd::tape().entries()[0].seq > autograd::tape().entries()[1].seq);
    std::ostringstream os;
    os << autograd::tape();
    CHECK(os.str().find("tape: 3 entries (newest first, the order backward replays them") == 0);
    CHECK_FALSE(y.is_leaf());
    CHECK(y.requires_grad());
    loss.backward();
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("ops on tensors that need no gradient record nothing") {
    Tensor a(Array{1.f, 2.f});
    Tensor y = ops::mul(a, a);
    CHECK(autograd::tape().empty());
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
  }

  TEST_CASE("backward accumulates into leaves with +=, across calls") {
    Tensor w(Array{1.f, 2.f, 3.f}, true);
    ops::sum(ops::mul(w, w)).backward();
    CHECK(all_close(w.grad(), Array{2.f, 4.f, 6.f}));
    ops::sum(ops::mul(w, w)).backward();
    CHECK(all_close(w.grad(), Array{4.f, 8.f, 12.f}));
    w.zero_grad();
    CHECK_FALSE(w.has_grad());
  }

  TEST_CASE("a tensor used twice (a diamond) receives the sum of both gradients") {
    Tensor x(Array{2.f, -1.f}, true);
    Tensor a = ops::mul(x, 3.0);  // 3x
    Tensor b = ops::exp(x);       // e^x
    Tensor loss = ops::sum(ops::add(a, b));
    loss.backward();
    CHECK(all_close(x.grad(), Array{3.f + std::exp(2.f), 3.f + std::exp(-1.f)}));
  }

  TEST_CASE("intermediate gradients are freed, and grad() of an intermediate is an error") {
    Tensor x(Array{1.f, 2.f}, true);
    Tensor y = ops::mul(x, 2.0);
    ops::sum(y).backward();
    CHECK_FALSE(y.has_grad());
    CHECK_THROWS_WITH_AS(y.grad(),
                         doctest::Contains("expected a leaf tensor, got the output of 'mul'"),
                         AutogradError);
  }

  TEST_CASE(
      "a second backward through released entries is an error unless retain_graph was asked for") {
    Tensor x(Array{1.f, 2.f}, true);
    SUBCASE("without retain_graph") {
      Tensor loss = ops::sum(ops::mul(x, x));
      loss.backward();
      CHECK_THROWS_WITH_AS(loss.backward(),
                           doctest::Contains("Trying to backward through the graph a second time"),
                           AutogradError);
    }
    SUBCASE("with retain_graph") {
      Tensor loss = ops::sum(ops::mul(x, x));
      loss.backward(/*retain_graph=*/true);
      CHECK(autograd::tape().size() == 2);  // nothing consumed: both entries can run again
      loss.backward();
      CHECK(all_close(x.grad(), Array{4.f, 8.f}));
      CHECK(autograd::tape().empty());
    }
  }

  TEST_CASE("backward needs a one-element loss that requires grad") {
    Tensor x(Array{1.f, 2.f}, true);
    Tensor y = ops::mul(x, 2.0);
    CHECK_THROWS_WITH_AS(
        y.backward(), doctest::Contains("grad can be implicitly created only for scalar outputs"),
        AutogradError);
    Tensor c(Array{1.f});
    CHECK_THROWS_WITH_AS(ops::sum(c).backward(), doctest::Contains("does not require grad"),
                         AutogradError);
    CHECK_THROWS_WITH_AS(ops::sum(x).backward(Array{1.f, 2.f}),
                         doctest::Contains("expected grad_output of shape ()"), ShapeError);
  }

  TEST_CASE("NoGradGuard records nothing, nests, and restores the previous mode") {
    Tensor x(Array{1.f}, true);
    {
      autograd::NoGradGuard outer;
      {
        autograd::NoGradGuard inner;
        CHECK_FALSE(autograd::grad_enabled());
      }
      CHECK_FALSE(autograd::grad_enabled());
      Tensor y = ops::mul(x, x);
      CHECK(autograd::tape().empty());
      CHECK_FALSE(y.requires_grad());
    }
    CHECK(autograd::grad_enabled());
  }

  TEST_CASE(
      "backward through a tensor modified in place since it was saved names the op and tensor") {
    Tensor w(Array{1.f, 2.f}, true);
    w.set_name("model.lut.weight");
    Tensor h = ops::mul(w, w);
    Tensor loss = ops::sum(h);
    const std::uint64_t mul = autograd::tape_of(h).entries()[0].seq;
    {
      autograd::NoGradGuard no_grad;
      w.mutable_data()(0) = 5.f;  // e.g. an optimizer step before backward
    }
    const std::string expected = "modified by an inplace operation | mul (entry #" +
                                 std::to_string(mul) +
                                 "): 'model.lut.weight' (2,) is at version 1; expected version 0";
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains(expected.c_str()), AutogradError);
    // What ran (sum) is consumed; the entry that refused (mul) is not, and still names the problem.
    REQUIRE(autograd::tape().size() == 1);
    CHECK(autograd::tape().entries()[0].op == "mul");
    CHECK_FALSE(w.has_grad());
  }

  TEST_CASE("the tape is empty after each backward: 1000 training-like iterations do not grow it") {
    Tensor w(Array{0.5f, -0.5f}, true);
    for (int i = 0; i < 1000; ++i) {
      Tensor loss = ops::sum(ops::mul(ops::tanh(w), w));
      loss.backward();
      REQUIRE(autograd::tape().empty());
      autograd::NoGradGuard no_grad;
      w.mutable_data() -= 0.01f * w.grad();
      w.zero_grad();
    }
  }

  TEST_CASE(
      "detach shares data and version but not the graph, clone copies and is differentiable") {
    Tensor x(Array{1.f, 2.f}, true);
    Tensor d = x.detach();
    CHECK_FALSE(d.requires_grad());
    d.mutable_data()(0) = 7.f;
    CHECK(x.data()(0) == 7.f);
    CHECK(x.version() == d.version());
    Tensor c = x.clone();
    CHECK(c.requires_grad());
    c.mutable_data()(1) = 9.f;
    CHECK(x.data()(1) == 2.f);
    Tensor c2 = x.clone();
    ops::sum(ops::mul(c2, 3.0)).backward();
    CHECK(all_close(x.grad(), Array{3.f, 3.f}));
  }

  TEST_CASE("the tape prints as a table of what backward will replay") {
    Tensor w(Array{1.f, 2.f, 3.f}, true);
    w.set_name("w");
    Tensor y = ops::mul(w, Tensor(Array{2.f, 2.f, 2.f}));
    Tensor loss = ops::sum(y);
    std::ostringstream os;
    os << autograd::tape();
    const std::string text = os.str();
    CHECK(text.find("tape: 2 entries") != std::string::npos);
    CHECK(text.find("mul") != std::string::npos);
    CHECK(text.find("(3,)* x (3,)") != std::string::npos);
    CHECK(text.find("'w' v0") != std::string::npos);
    CHECK(autograd::tape().to_dot().find("digraph tape") == 0);
    loss.backward();
  }

  TEST_CASE("the printed tape's columns widen to fit long op names and module paths") {
    Tensor x(Array{1.f, 2.f}, true);
    Tensor y(Array{2.f, 4.f});
    {
      autograd::ModuleScope scope("Block",
                                  "encoder.layers.0.self_attention");  // a 31-character path
      autograd::record("an_op_with_a_long_name", y, {x}, {},
                       [x](Array dy) { x.accumulate_grad(std::move(dy)); });
    }
    std::ostringstream os;
    os << autograd::tape();
    const std::string text = os.str();
    const std::size_t op = text.find("an_op_with_a_long_name"),
                      path = text.find("encoder.layers.0.self_attention");
    REQUIRE(op != std::string::npos);
    REQUIRE(path != std::string::npos);
    // Each cell is followed by at least two spaces, and the cells line up with their headers.
    CHECK(text.compare(op + 22, 2, "  ") == 0);
    CHECK(text.compare(path + 31, 2, "  ") == 0);
    const std::size_t header = text.find('\n') + 1, row = text.rfind('\n', op) + 1;
    CHECK(text.find("module", header) - header == path - row);
    CHECK(text.find("inputs", header) - header == text.find("(2,)*", row) - row);
  }

  TEST_CASE("anomaly mode names the first op that produced a NaN or Inf") {
    Tensor x(Array{-1.f, 1.f}, true);
    autograd::AnomalyGuard anomaly;
    CHECK_THROWS_WITH_AS(ops::log(x), doctest::Contains("'log' produced 1 NaN/Inf"), AutogradError);
    CHECK(autograd::tape().empty());
  }

  TEST_CASE("gradients flow to a leaf that is the loss itself") {
    Tensor x(Array{3.f}, true);
    x.backward();
    CHECK(x.grad()(0) == 1.f);
  }

  TEST_CASE(
      "backward(G) leaves G unchanged, whether the loss's entry reads its gradient or rewrites "
      "it") {
    // embedding's backward only reads dy; dropout's rewrites dy in place. Either way the closure is
    // given its own copy of G (pass std::move(G) to hand the buffer over) and the caller's G is intact.
    Parameter w(Array{{1.f, 2.f}, {3.f, 4.f}});
    IndexArray ids{1, 1, 0};
    const Array G{{1.f, 10.f}, {100.f, 1000.f}, {5.f, 6.f}};
    Tensor y = ops::embedding(ids, w, {});
    y.backward(G);
    CHECK(all_close(w.grad(), Array{{5.f, 6.f}, {101.f, 1010.f}}));
    CHECK(all_close(G, Array{{1.f, 10.f}, {100.f, 1000.f}, {5.f, 6.f}}));

    // dropout's closure takes dy by value: the engine hands it a copy of G, never G itself.
    Generator gen(0);
    Tensor x(Array{1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f}, true);
    Tensor d = ops::dropout(x, 0.5, /*training=*/true, gen);
    const Array H = xt::ones<float>({8});
    d.backward(H);
    CHECK(all_close(H, xt::ones<float>({8})));
    for (std::size_t i = 0; i < 8; ++i) CHECK(x.grad()(i) == (d.data()(i) == 0.f ? 0.f : 2.f));
  }

  TEST_CASE("a seed of the wrong shape is refused before anything runs, and the graph is kept") {
    Parameter w(Array{{1.f, 2.f}, {3.f, 4.f}});
    Tensor y = ops::embedding(IndexArray{0, 1}, w, {});
    CHECK_THROWS_WITH_AS(
        y.backward(Array{1.f, 2.f}),
        doctest::Contains(
            "backward: expected grad_output of shape (2, 2) (the tensor's), got (2,)"),
        ShapeError);
    CHECK_FALSE(w.has_grad());
    CHECK(autograd::tape().size() == 1);  // kept: the right seed still works
    y.backward(xt::ones<float>({2, 2}));
    CHECK(all_close(w.grad(), xt::ones<float>({2, 2})));
  }

  TEST_CASE(
      "tape_of(loss) lists what a backward from loss replays, newest first, and not other graphs") {
    Tensor w(Array{1.f, 2.f}, true);
    Tensor other = ops::mul(w, 5.0);  // another graph: not reachable from loss
    Tensor loss = ops::sum(ops::tanh(ops::mul(w, w)));
    const autograd::Tape replay = autograd::tape_of(loss);
    REQUIRE(replay.size() == 3);
    CHECK(replay.entries()[0].op == "sum");
    CHECK(replay.entries()[1].op == "tanh");
    CHECK(replay.entries()[2].op == "mul");
    CHECK(replay.entries()[0].seq > replay.entries()[2].seq);
    CHECK(autograd::tape().size() == 4);  // this thread's tape has the other graph too
    std::ostringstream os;
    os << replay;
    CHECK(os.str().find("tape: 3 entries (newest first, the order backward replays them") == 0);
    CHECK(replay.to_dot().find("digraph tape") == 0);
    loss.backward();
    const autograd::Tape after = autograd::tape_of(loss);
    REQUIRE(after.size() == 1);  // consumed: the branch ends at the loss's entry
    CHECK(after.entries()[0].consumed);
    os.str("");
    os << after;
    CHECK(os.str().find("sum (consumed)") != std::string::npos);
    CHECK(autograd::tape().size() == 1);  // only the other graph is still waiting
    CHECK(autograd::tape().entries()[0].op == "mul");
    CHECK(autograd::tape_of(other).size() == 1);
  }

  TEST_CASE("the Graphviz export draws each op between the tensors it reads and writes") {
    Tensor w(Array{1.f, 2.f}, true);
    w.set_name("w");
    Tensor y = ops::mul(w, 2.0);
    Tensor loss = ops::sum(y);
    const std::string dot = autograd::tape_of(loss).to_dot();
    const std::string mul = "op" + std::to_string(autograd::tape_of(loss).entries()[1].seq);
    const std::string sum = "op" + std::to_string(autograd::tape_of(loss).entries()[0].seq);
    CHECK(dot.find("label=\"w\\n(2,) *\"") != std::string::npos);
    CHECK(dot.find(mul + " -> out") != std::string::npos);
    CHECK(dot.find("-> " + sum + ";") != std::string::npos);
    CHECK(dot.back() == '\n');
  }

}  // TEST_SUITE
