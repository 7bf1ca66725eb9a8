// tests/core/test_tensor.cpp: the Tensor handle's sharing rule, gradients and its printout.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include <tapegrad/core.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::all_close;

TEST_SUITE("tensor") {
  TEST_CASE("copies share data, gradient and version, and mutable_data bumps the version") {
    Tensor a(Array{1.f, 2.f, 3.f}, true);
    Tensor b = a;
    CHECK(b.is_same(a));
    b.mutable_data()(0) = 5.f;
    CHECK(a.data()(0) == 5.f);
    CHECK(a.version() == 1);
    b.accumulate_grad(Array{1.f, 1.f, 1.f});
    CHECK(a.has_grad());
  }

  TEST_CASE(
      "a detached handle or a Parameter made from a tensor keeps the shared data alive on its "
      "own") {
    // A tensor and its data are one allocation; handles sharing the data must keep it alive after
    // every handle of the original is gone (ASan checks the lifetime; LSan that nothing leaks).
    Tensor d;
    Parameter p;
    {
      Tensor t(Array{1.f, 2.f});
      d = t.detach();
      p = Parameter(t);
      Tensor dd = d.detach();  // a share of a share: the same data again
      dd.mutable_data()(0) = 7.f;
    }
    CHECK(d.data()(0) == 7.f);
    CHECK(p.data()(1) == 2.f);
    CHECK(d.version() == 1);  // one counter for all three handles
    p.mutable_data()(1) = 9.f;
    CHECK(d.data()(1) == 9.f);
    CHECK(d.version() == 2);
    CHECK_FALSE(d.is_same(p));  // separate tensors: flags and gradients their own
    CHECK(p.requires_grad());
    CHECK_FALSE(d.requires_grad());
  }

  TEST_CASE("item reads a one-element tensor and refuses others") {
    CHECK(Tensor(Array{4.5f}).item() == 4.5f);
    CHECK_THROWS_WITH_AS(
        Tensor(Array{1.f, 2.f}).item(),
        doctest::Contains("a Tensor with 2 elements cannot be converted to Scalar"), ValueError);
  }

  TEST_CASE("an empty handle is reported, not dereferenced") {
    Tensor t;
    CHECK_FALSE(t.defined());
    CHECK_THROWS_WITH_AS(t.data(), doctest::Contains("expected a defined tensor"), ValueError);
  }

  TEST_CASE("grad() explains a missing, sparse or intermediate gradient") {
    Tensor w(Array{{1.f, 2.f}, {3.f, 4.f}}, true);
    w.set_name("lut.weight");
    CHECK_THROWS_WITH_AS(w.grad(), doctest::Contains("'lut.weight' (2, 2) has no gradient"),
                         AutogradError);
    w.accumulate_grad(RowSparseGrad{IndexArray{1}, Array{{1.f, 1.f}}, {2, 2}});
    CHECK(w.grad_is_sparse());
    CHECK_THROWS_WITH_AS(
        w.grad(), doctest::Contains("has a row-sparse gradient; use sparse_grad() or grad_dense()"),
        TypeError);
    CHECK(all_close(w.grad_dense(), Array{{0.f, 0.f}, {1.f, 1.f}}));
  }

  TEST_CASE("accumulation follows PyTorch's table for dense and row-sparse gradients") {
    const RowSparseGrad s1{IndexArray{1, 1}, Array{{1.f, 2.f}, {3.f, 4.f}}, {3, 2}};
    const RowSparseGrad s2{IndexArray{0}, Array{{5.f, 6.f}}, {3, 2}};
    SUBCASE("sparse + sparse concatenates without coalescing") {
      Tensor w(Array::from_shape({3, 2}), true);
      w.accumulate_grad(s1);
      w.accumulate_grad(s2);
      CHECK(w.sparse_grad().indices == IndexArray{1, 1, 0});
      CHECK(all_close(w.sparse_grad().coalesce().values, Array{{5.f, 6.f}, {4.f, 6.f}}));
    }
    SUBCASE("sparse + dense becomes dense") {
      Tensor w(Array::from_shape({3, 2}), true);
      w.accumulate_grad(s1);
      w.accumulate_grad(Array(xt::ones<float>({3, 2})));
      CHECK_FALSE(w.grad_is_sparse());
      CHECK(all_close(w.grad(), Array{{1.f, 1.f}, {5.f, 7.f}, {1.f, 1.f}}));
    }
    SUBCASE("dense + sparse scatter-adds the rows") {
      Tensor w(Array::from_shape({3, 2}), true);
      w.accumulate_grad(Array(xt::ones<float>({3, 2})));
      w.accumulate_grad(s2);
      CHECK(all_close(w.grad(), Array{{6.f, 7.f}, {1.f, 1.f}, {1.f, 1.f}}));
    }
    SUBCASE("zero_grad(set_to_none=false) zero-fills dense and empties sparse") {
      Tensor w(Array::from_shape({3, 2}), true);
      w.accumulate_grad(s1);
      w.zero_grad(false);
      CHECK(w.grad_is_sparse());
      CHECK(w.sparse_grad().nnz_rows() == 0);
      Tensor d(Array::from_shape({3, 2}), true);
      d.accumulate_grad(Array(xt::ones<float>({3, 2})));
      const float* before = d.grad().data();
      d.zero_grad(false);
      CHECK(d.grad().data() == before);  // the memory is kept
      CHECK(all_close(d.grad(), Array(xt::zeros<float>({3, 2}))));
    }
  }

  TEST_CASE("a row-sparse gradient handed over by move is adopted first and concatenated after") {
    auto make = [](IndexArray ids, Array values) {
      return RowSparseGrad{std::move(ids), std::move(values), {3, 2}};
    };
    SUBCASE("the first one is adopted without a copy") {
      Tensor w(Array::from_shape({3, 2}), true);
      RowSparseGrad g = make(IndexArray{2}, Array{{1.f, 2.f}});
      const float* buffer = g.values.data();
      w.accumulate_grad(std::move(g));
      CHECK(w.sparse_grad().values.data() == buffer);
      CHECK(w.sparse_grad().indices == IndexArray{2});
    }
    SUBCASE("a second one concatenates, as the copying overload does") {
      Tensor w(Array::from_shape({3, 2}), true);
      w.accumulate_grad(make(IndexArray{1}, Array{{1.f, 2.f}}));
      w.accumulate_grad(make(IndexArray{0, 1}, Array{{3.f, 4.f}, {5.f, 6.f}}));
      CHECK(w.sparse_grad().indices == IndexArray{1, 0, 1});
      CHECK(all_close(w.sparse_grad().to_dense(), Array{{3.f, 4.f}, {6.f, 8.f}, {0.f, 0.f}}));
    }
    SUBCASE("after zero_grad(set_to_none=false) it replaces the empty gradient") {
      Tensor w(Array::from_shape({3, 2}), true);
      w.accumulate_grad(make(IndexArray{1}, Array{{1.f, 2.f}}));
      w.zero_grad(false);
      w.accumulate_grad(make(IndexArray{0}, Array{{7.f, 8.f}}));
      CHECK(w.sparse_grad().indices == IndexArray{0});
      CHECK(all_close(w.sparse_grad().to_dense(), Array{{7.f, 8.f}, {0.f, 0.f}, {0.f, 0.f}}));
    }
    SUBCASE("onto a dense gradient it scatter-adds the rows") {
      Tensor w(Array::from_shape({3, 2}), true);
      w.accumulate_grad(Array(xt::ones<float>({3, 2})));
      w.accumulate_grad(make(IndexArray{2}, Array{{1.f, 2.f}}));
      CHECK_FALSE(w.grad_is_sparse());
      CHECK(all_close(w.grad(), Array{{1.f, 1.f}, {1.f, 1.f}, {2.f, 3.f}}));
    }
    SUBCASE("a wrong dense shape is refused, naming the op") {
      Tensor w(Array::from_shape({3, 2}), true);
      CHECK_THROWS_WITH_AS(
          w.accumulate_grad(RowSparseGrad{IndexArray{0}, Array{{1.f, 2.f}}, {4, 2}}, "myop"),
          doctest::Contains("myop: produced a row-sparse gradient of dense shape (4, 2)"),
          AutogradError);
      CHECK_FALSE(w.has_grad());
    }
  }

  TEST_CASE("a gradient of the wrong shape is refused, naming the op") {
    Tensor w(Array{1.f, 2.f}, true);
    CHECK_THROWS_WITH_AS(
        w.accumulate_grad(Array{1.f}, "myop"),
        doctest::Contains("myop: produced a gradient of shape (1,) for tensor (2,); expected the "
                          "tensor's shape (2,)"),
        AutogradError);
  }

  TEST_CASE("requires_grad_ works on leaves only") {
    Tensor x(Array{1.f}, true);
    Tensor y = x * 2.0;
    CHECK_THROWS_WITH_AS(y.requires_grad_(false),
                         doctest::Contains("you can only change requires_grad flags of leaf"),
                         AutogradError);
    x.requires_grad_(false);
    CHECK_FALSE(x.requires_grad());
  }

  TEST_CASE("the summary shows shape, range, mean and counts NaN and Inf") {
    Tensor t(Array{1.f, NAN, 3.f, INFINITY});
    const std::string s = summary(t);
    CHECK(s.find("shape=(4,)") != std::string::npos);
    CHECK(s.find("min=1") != std::string::npos);
    CHECK(s.find("max=3") != std::string::npos);
    CHECK(s.find("mean=2") != std::string::npos);
    CHECK(s.find("nan=1, inf=1") != std::string::npos);
    std::ostringstream os;
    os << t;
    CHECK(os.str().find('\n') != std::string::npos);  // small: the values follow
  }

}  // TEST_SUITE
