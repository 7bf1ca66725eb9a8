// tests/autograd/test_edges.cpp: an entry holds its inputs as edges, and keeps of their values
// only what its backward reads. An edge routes gradients and knows its shape, never reads data;
// which side of a product gets a gradient is decided when the forward runs, as in PyTorch.
#include <doctest/doctest.h>

#include <optional>

#include <tapegrad/core.hpp>
#include <tapegrad/autograd/tape.hpp>
#include <tapegrad/ops/elementwise.hpp>
#include <tapegrad/ops/matmul.hpp>
#include <tapegrad/ops/reduce.hpp>
#include <tapegrad/ops/shape.hpp>

using namespace tapegrad;

namespace {
bool same(const Array& a, const Array& b) { return a.shape() == b.shape() && a == b; }
Array column(float top, float bottom) {
  Array c{top, bottom};
  c.reshape({2, 1});
  return c;
}

// For each entry loss's backward would run, newest first: which of its inputs' values are still
// in memory (what the tape keeps for backward, after the forward's own handles have gone).
std::vector<std::vector<bool>> kept(const Tensor& loss) {
  std::vector<std::vector<bool>> out;
  for (const autograd::TapeEntry& e : autograd::tape_of(loss).entries()) {
    out.emplace_back();
    for (const auto& in : e.inputs) out.back().push_back(in.values_kept);
  }
  return out;
}
using Kept = std::vector<bool>;
}  // namespace

TEST_SUITE("autograd.edges") {
  TEST_CASE("an edge routes gradients and knows its shape and name, but never reads data") {
    Parameter w(Array{1.0f, 2.0f, 3.0f});
    w.set_name("w");
    const Tensor e = w.edge();
    const Tensor copy = e;  // a copy of an edge is an edge
    CHECK(e.is_edge());
    CHECK(copy.is_edge());
    CHECK_FALSE(w.is_edge());
    CHECK(e.is_same(w));
    CHECK(e.shape() == Shape{3});
    CHECK(e.numel() == 3);
    CHECK(e.requires_grad());
    CHECK(e.describe() == "'w' (3,)");
    const char* expected =
        "Tensor::data: this handle is an edge() of 'w' (3,), which routes gradients but never "
        "reads data; an op whose backward reads an input must capture the input itself, not its "
        "edge()";
    CHECK_THROWS_WITH_AS(e.data(), expected, AutogradError);
    CHECK_THROWS_WITH_AS(e.mutable_data(),
                         doctest::Contains("Tensor::mutable_data: this handle is "
                                           "an edge() of 'w'"),
                         AutogradError);
    CHECK_THROWS_WITH_AS(e.detach(), doctest::Contains("Tensor::detach: this handle is an edge()"),
                         AutogradError);
    CHECK_THROWS_AS(e.version(), AutogradError);
    e.accumulate_grad(Array{1.0f, 1.0f, 1.0f});
    CHECK(same(w.grad(), Array{1.0f, 1.0f, 1.0f}));
  }

  TEST_CASE("add keeps neither input's values, mul keeps both, and the gradients are unchanged") {
    Parameter p(Array{1.0f, -2.0f});
    Tensor a = ops::mul(p, p);  // #0 mul: its output a is an input of add only
    Tensor b = ops::mul(p, p);  // #1 mul: its output b is an input of mul
    Tensor loss = ops::sum(ops::mul(ops::add(a, p), b));
    a = Tensor();
    b = Tensor();
    const auto k = kept(loss);  // sum, mul, add, #1 mul, #0 mul
    REQUIRE(k.size() == 5);
    CHECK(k[0] == Kept{false});        // the product: sum reads only its shape
    CHECK(k[1] == Kept{true, true});   // a + p and b: mul reads both
    CHECK(k[2] == Kept{false, true});  // a: add reads only shapes (p is a parameter: kept)
    CHECK(k[3] == Kept{true, true});
    loss.backward();
    // loss = sum((p^2 + p) p^2) = sum(p^4 + p^3): d/dp = 4 p^3 + 3 p^2
    CHECK(same(p.grad(), Array{7.0f, -20.0f}));
  }

  TEST_CASE("a frozen Linear does not keep its input, a trained one does") {
    for (const bool train_weight : {false, true}) {
      CAPTURE(train_weight);
      Parameter p(Array{{1.0f, 2.0f}, {3.0f, 4.0f}});
      Parameter weight(Array{{0.5f, -1.0f}, {2.0f, 0.25f}, {1.0f, 1.0f}}, train_weight);
      Tensor h = ops::add(p, p);  // the Linear's input
      Tensor loss = ops::sum(ops::linear(h, weight, Tensor()));
      h = Tensor();
      const auto k = kept(loss);  // sum, linear, add
      REQUIRE(k.size() == 3);
      CHECK(k[1] == Kept{train_weight, true});  // dW = dY^T X reads X; dX = dY W does not
      loss.backward();
      // dX = dY W with dY all ones: each row is the column sums of W, doubled by add
      CHECK(same(p.grad(), Array{{7.0f, 0.5f}, {7.0f, 0.5f}}));
      if (train_weight)
        CHECK(same(weight.grad(), Array{{8.0f, 12.0f}, {8.0f, 12.0f}, {8.0f, 12.0f}}));
    }
  }

  TEST_CASE(
      "a weight frozen during the forward gets no gradient, even if unfrozen before backward") {
    // PyTorch builds the graph from the forward's flags: a weight that did not require grad then
    // has no edge, and its x was never kept for dW.
    Parameter x(Array{{1.0f, 2.0f}});
    Parameter weight(Array{{1.0f, 1.0f}}, false);
    Tensor loss = ops::sum(ops::linear(x, weight, Tensor()));
    weight.requires_grad_(true);
    loss.backward();
    CHECK_FALSE(weight.has_grad());
    CHECK(same(x.grad(), Array{{1.0f, 1.0f}}));
    Tensor m = ops::matmul(x, ops::reshape(weight.detach(), {2, 1}));
    CHECK_NOTHROW(ops::sum(m).backward());
  }

  TEST_CASE("a weight frozen after the forward gets no gradient, as PyTorch's AccumulateGrad") {
    Parameter x(Array{{1.0f, 2.0f}});
    Parameter weight(Array{{1.0f, 1.0f}});
    Parameter m(column(3.0f, 4.0f));
    Tensor loss = ops::sum(ops::linear(x, weight, Tensor())) + ops::sum(ops::matmul(x, m));
    weight.requires_grad_(false);
    m.requires_grad_(false);
    loss.backward();
    CHECK_FALSE(weight.has_grad());
    CHECK_FALSE(m.has_grad());
    CHECK(same(x.grad(), Array{{4.0f, 5.0f}}));
  }

  TEST_CASE("a Parameter is not made from an edge, which has no data to give it") {
    const Tensor t(Array{1.0f, 2.0f});
    CHECK_THROWS_WITH_AS(Parameter(t.edge()),
                         "Parameter: expected a tensor with its data, got an edge() of tensor "
                         "(2,), which never reads data",
                         ValueError);
  }

  TEST_CASE("a product keeps a side's values only for the other side's gradient") {
    Parameter a(Array{{1.0f, 2.0f}, {3.0f, 4.0f}});
    for (const bool b_trains : {false, true}) {
      CAPTURE(b_trains);
      a.zero_grad();
      Parameter b(column(1.0f, -1.0f), b_trains);
      Tensor a2 = ops::add(a, a);
      Tensor loss = ops::sum(ops::matmul(a2, b));
      a2 = Tensor();
      const auto k = kept(loss);  // sum, matmul, add
      REQUIRE(k.size() == 3);
      CHECK(k[1] == Kept{b_trains, true});
      loss.backward();
      CHECK(same(a.grad(), Array{{2.0f, -2.0f}, {2.0f, -2.0f}}));
      if (b_trains) CHECK(same(b.grad(), column(8.0f, 12.0f)));
    }
  }
}
