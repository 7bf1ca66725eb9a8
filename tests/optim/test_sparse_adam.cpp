// tests/optim/test_sparse_adam.cpp: SparseAdam, the lazy Adam (PyTorch's torch.optim.SparseAdam).
#include <doctest/doctest.h>

#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"
#include "golden_optim.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {
// Row r of a (rows, dim) array, as a (dim,) array.
Array row(const Array& a, std::size_t r) {
  const std::size_t dim = a.shape()[1];
  Array out = Array::from_shape({dim});
  std::copy_n(a.data() + r * dim, dim, out.data());
  return out;
}
}  // namespace

TEST_SUITE("optim.sparse_adam") {
  TEST_CASE("the first two steps on a touched row match the values worked out in double") {
    Parameter p(Array{{1.f, 1.f}});
    SparseAdam opt({p});
    std::vector<float> theta;
    for (int s = 0; s < 2; ++s) {
      p.accumulate_grad(RowSparseGrad{IndexArray{0}, Array{{0.5f, 0.5f}}, {1, 2}});
      opt.step();
      opt.zero_grad();
      theta.push_back(p.data()(0, 0));
    }
    CHECK(theta[0] == doctest::Approx(0.9990000006324551).epsilon(1e-6));
    CHECK(theta[1] == doctest::Approx(0.9980000010797804).epsilon(1e-6));
  }

  TEST_CASE(
      "three steps match PyTorch: repeated ids summed first, an empty gradient, rows never "
      "touched") {
    Parameter p(golden::array(golden::kSparseTheta0, {5, 3}));
    SparseAdam opt({p}, SparseAdamOptions(0.05));
    const Array theta0 = p.data();

    p.accumulate_grad(
        RowSparseGrad{IndexArray{1, 3, 3}, golden::array(golden::kSparseValues1, {3, 3}), {5, 3}});
    opt.step();
    opt.zero_grad();
    CHECK(all_close(p.data(), golden::array(golden::kSparseAfter1, {5, 3}), golden::kAtol, 1e-6));

    p.accumulate_grad(
        RowSparseGrad{IndexArray::from_shape({0}), Array::from_shape({0, 3}), {5, 3}});
    const Array before_empty = p.data();
    opt.step();  // no rows: nothing moves, the step count advances
    opt.zero_grad();
    CHECK(bit_equal(p.data(), before_empty));
    CHECK(opt.state(p)->step == 2);

    p.accumulate_grad(
        RowSparseGrad{IndexArray{3, 0}, golden::array(golden::kSparseValues3, {2, 3}), {5, 3}});
    opt.step();
    CHECK(all_close(p.data(), golden::array(golden::kSparseAfter3, {5, 3}), golden::kAtol, 1e-6));
    CHECK(opt.state(p)->step == 3);
    for (std::size_t r : {2, 4}) {  // never in a gradient: bit-identical, moments zero
      CHECK(bit_equal(row(p.data(), r), row(theta0, r)));
      CHECK(bit_equal(row(opt.state(p)->exp_avg, r), Array{0.f, 0.f, 0.f}));
    }
  }

  TEST_CASE(
      "rows absent from a step are bit-identical after it, moments included (no "
      "pytorch/pytorch#18404 drift)") {
    Generator gen(3);
    Parameter p(randn({6, 4}, &gen));
    SparseAdam opt({p}, SparseAdamOptions(0.01));
    for (int s = 0; s < 20; ++s) {
      const std::int64_t a = s % 6, b = (s * 5 + 1) % 6;
      const Array theta = p.data();
      Array m = Array::from_shape({6, 4});
      std::fill(m.begin(), m.end(), 0.0f);
      if (opt.state(p)) m = opt.state(p)->exp_avg;
      p.accumulate_grad(RowSparseGrad{IndexArray{a, b}, randn({2, 4}, &gen), {6, 4}});
      opt.step();
      opt.zero_grad();
      for (std::size_t r = 0; r < 6; ++r) {
        if (std::int64_t(r) == a || std::int64_t(r) == b) continue;
        CHECK(bit_equal(row(p.data(), r), row(theta, r)));
        CHECK(bit_equal(row(opt.state(p)->exp_avg, r), row(m, r)));
      }
    }
  }

  TEST_CASE("a dense gradient is refused with PyTorch's text, before anything changes") {
    Parameter emb(Array{{1.f, 1.f}, {2.f, 2.f}}), out(Array{{3.f, 3.f}});
    out.set_name("out.weight");
    SparseAdam opt({emb, out});
    emb.accumulate_grad(RowSparseGrad{IndexArray{0}, Array{{1.f, 1.f}}, {2, 2}});
    out.set_grad(Array{{1.f, 1.f}});
    CHECK_THROWS_WITH_AS(
        opt.step(),
        doctest::Contains("SparseAdam does not support dense gradients, please consider Adam "
                          "instead | SparseAdam: 'out.weight' has a dense gradient"),
        TypeError);
    CHECK(bit_equal(emb.data(), Array{{1.f, 1.f}, {2.f, 2.f}}));
    CHECK(opt.state(emb) == nullptr);
  }

  TEST_CASE(
      "invalid hyper-parameters are refused with PyTorch's texts and lr and eps must be positive") {
    Parameter p(Array{{1.f, 1.f}});
    CHECK_THROWS_WITH_AS(SparseAdam({p}, SparseAdamOptions(0.0)),
                         doctest::Contains("Invalid learning rate: 0.0"), ValueError);
    CHECK_THROWS_WITH_AS(SparseAdam({p}, SparseAdamOptions().eps(0.0)),
                         doctest::Contains("Invalid epsilon value: 0.0"), ValueError);
    CHECK_THROWS_WITH_AS(SparseAdam({p}, SparseAdamOptions().betas({-0.1, 0.999})),
                         doctest::Contains("Invalid beta parameter at index 0: -0.1"), ValueError);
    CHECK_THROWS_WITH_AS(SparseAdam({p}, SparseAdamOptions().betas({0.9, 1.5})),
                         doctest::Contains("Invalid beta parameter at index 1: 1.5"), ValueError);
  }

  TEST_CASE("a null gradient does not advance the step count and maximize ascends") {
    Parameter a(Array{{1.f, 1.f}}), b(Array{{1.f, 1.f}});
    SparseAdam opt({a, b}, SparseAdamOptions(0.1).maximize(true));
    a.accumulate_grad(RowSparseGrad{IndexArray{0}, Array{{0.5f, 0.5f}}, {1, 2}});
    opt.step();
    CHECK(opt.state(b) == nullptr);
    CHECK(b.data()(0, 0) == 1.f);
    CHECK(opt.state(a)->step == 1);
    CHECK(a.data()(0, 0) > 1.f);
  }

  TEST_CASE("a state-dict round trip gives identical subsequent steps") {
    Generator gen(11);
    const Array theta0 = randn({4, 2}, &gen);
    Parameter p(theta0);
    SparseAdam opt({p}, SparseAdamOptions(0.05));
    std::vector<RowSparseGrad> grads;
    for (int s = 0; s < 4; ++s)
      grads.push_back(RowSparseGrad{IndexArray{s % 4, 2}, randn({2, 2}, &gen), {4, 2}});
    for (int s = 0; s < 2; ++s) {
      p.accumulate_grad(grads[s]);
      opt.step();
      opt.zero_grad();
    }
    const OptimizerState saved = opt.state_dict();
    Parameter q(p.data());
    SparseAdam restored({q}, SparseAdamOptions(0.5));
    restored.load_state_dict(saved);
    CHECK(restored.options(0).lr() == 0.05);
    for (int s = 2; s < 4; ++s) {
      p.accumulate_grad(grads[s]);
      q.accumulate_grad(grads[s]);
      opt.step();
      restored.step();
      opt.zero_grad();
      restored.zero_grad();
    }
    CHECK(bit_equal(p.data(), q.data()));
    CHECK(restored.state(q)->step == 4);
  }
}  // TEST_SUITE
