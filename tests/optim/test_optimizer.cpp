// tests/optim/test_optimizer.cpp: what every optimizer shares (torch.optim's rules): parameter
// groups and their checks, zero_grad, hyper-parameters per group, and the state dict.
#include <doctest/doctest.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::bit_equal;

// Optimizers take Parameters only: a Buffer (or a plain Tensor) cannot be trained, by type.
static_assert(!std::is_convertible_v<Buffer, Parameter>);
static_assert(!std::is_constructible_v<Adam, std::vector<Buffer>>);
static_assert(!std::is_constructible_v<Adam, std::vector<Buffer>, AdamOptions>);
static_assert(!std::is_constructible_v<AdamW, std::vector<Buffer>>);
static_assert(!std::is_constructible_v<SGD, std::vector<Buffer>, SGDOptions>);
static_assert(!std::is_constructible_v<SparseAdam, std::vector<Buffer>>);
static_assert(!std::is_constructible_v<Adam, std::vector<Tensor>>);
static_assert(std::is_constructible_v<Adam, std::vector<Parameter>>);
static_assert(!std::is_copy_constructible_v<Adam>);

namespace {
Parameter named(Array data, const std::string& name) {
  Parameter p(std::move(data));
  p.set_name(name);
  return p;
}

Array scaled(Array a, float k) {
  for (float& v : a) v *= k;
  return a;
}

// `steps` steps of opt on w (2, 3) and b (3,) with gradients that change from step to step.
void train(Adam& opt, const Parameter& w, const Parameter& b, int steps, float scale) {
  for (int s = 0; s < steps; ++s) {
    w.set_grad(scaled(Array{{0.1f, -0.2f, 0.3f}, {0.4f, -0.5f, 0.6f}}, scale + float(s)));
    b.set_grad(scaled(Array{1.f, -1.f, 0.5f}, scale - float(s)));
    opt.step();
    opt.zero_grad();
  }
}
}  // namespace

TEST_SUITE("optim.optimizer") {
  TEST_CASE("parameter lists are checked with PyTorch's texts") {
    Parameter a = named(Array{1.f}, "a"), lut = named(Array{{1.f, 1.f}}, "lut.weight");
    CHECK_THROWS_WITH_AS(Adam(std::vector<Parameter>{}),
                         doctest::Contains("optimizer got an empty parameter list"), ValueError);
    CHECK_THROWS_WITH_AS(SGD(std::vector<SGD::Group>{}),
                         doctest::Contains("optimizer got an empty parameter list"), ValueError);
    CHECK_THROWS_WITH_AS(
        Adam({a, lut, lut}),
        doctest::Contains("optimizer contains a parameter group with duplicate parameters | "
                          "Adam: 'lut.weight' appears twice"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        Adam({Adam::Group{{a, lut}, AdamOptions()}, Adam::Group{{lut}, AdamOptions()}}),
        doctest::Contains("some parameters appear in more than one parameter group | Adam: "
                          "'lut.weight' is in groups 0 and 1"),
        ValueError);
    CHECK_THROWS_WITH_AS(
        SparseAdam({a, Parameter()}),
        doctest::Contains("optimizer can only optimize Tensors, but one of the params is NoneType"),
        TypeError);
    // A group may be empty, as in PyTorch, as long as the optimizer has some group.
    CHECK_NOTHROW(SGD({SGD::Group{{a}, SGDOptions()}, SGD::Group{{}, SGDOptions()}}));
  }

  TEST_CASE("two handles of the same parameter are the same parameter") {
    Parameter a(Array{1.f});
    Parameter alias = a;  // a copy of the handle, not of the data
    CHECK_THROWS_AS(AdamW({a, alias}), ValueError);
  }

  TEST_CASE("zero_grad drops gradients by default, or zero-fills them") {
    Parameter a(Array{1.f, 2.f}), lut(Array{{1.f, 1.f}, {2.f, 2.f}});
    SGD opt({a, lut});
    a.set_grad(Array{3.f, 4.f});
    lut.accumulate_grad(RowSparseGrad{IndexArray{1}, Array{{1.f, 1.f}}, {2, 2}});
    opt.zero_grad(/*set_to_none=*/false);
    CHECK(bit_equal(a.grad(), Array{0.f, 0.f}));
    CHECK(lut.sparse_grad().nnz_rows() == 0);
    opt.zero_grad();
    CHECK_FALSE(a.has_grad());
    CHECK_FALSE(lut.has_grad());
  }

  TEST_CASE(
      "groups, ids and hyper-parameters are readable and lr is writable through the base class") {
    Parameter a(Array{1.f}), b(Array{1.f}), c(Array{1.f});
    AdamW opt({AdamW::Group{{a, b}, AdamWOptions(0.1)},
               AdamW::Group{{c}, AdamWOptions(0.2).weight_decay(0.0)}});
    Optimizer& base = opt;
    CHECK(base.type_name() == "AdamW");
    CHECK(base.num_param_groups() == 2);
    CHECK(base.params(1).size() == 1);
    CHECK(base.param_id(c) == 2);
    CHECK(base.lr(1) == 0.2);
    base.set_lr(1, 0.05);
    CHECK(opt.options(1).lr() == 0.05);
    CHECK(opt.options(1).weight_decay() == 0.0);
    CHECK_THROWS_WITH_AS(base.lr(2), doctest::Contains("expected a group index in [0, 2), got 2"),
                         IndexError);
  }

  TEST_CASE(
      "set_lr refuses what each constructor refuses, PyTorch's text first, changing nothing") {
    Parameter a(Array{1.f}), b(Array{1.f}), c(Array{1.f});
    Adam adam({a}, AdamOptions(0.1));
    SGD sgd({b}, SGDOptions(0.1));
    SparseAdam sparse({c}, SparseAdamOptions(0.1));
    Optimizer& base = adam;
    CHECK_THROWS_WITH_AS(base.set_lr(0, -1),
                         doctest::Contains("Invalid learning rate: -1.0 | Adam: expected lr >= 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(adam.set_lr(0, NAN), doctest::Contains("Invalid learning rate: nan"),
                         ValueError);  // Adam's `not 0.0 <= lr`
    CHECK_THROWS_WITH_AS(sgd.set_lr(0, -0.5),
                         doctest::Contains("Invalid learning rate: -0.5 | SGD: expected lr >= 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        sparse.set_lr(0, 0.0),
        doctest::Contains("Invalid learning rate: 0.0 | SparseAdam: expected lr > 0"),
        ValueError);  // strict, as its constructor
    CHECK(adam.lr(0) == 0.1);
    CHECK(sgd.lr(0) == 0.1);
    CHECK(sparse.lr(0) == 0.1);
    adam.set_lr(0, 0.0);  // what Adam's constructor accepts, set_lr accepts
    CHECK(adam.lr(0) == 0.0);
    CHECK_THROWS_AS(base.set_lr(1, 0.1), IndexError);
  }

  TEST_CASE(
      "state_dict mirrors PyTorch: state by id across groups, param_groups with hyper-parameters") {
    Parameter w(Array{{1.f, 2.f}}), b(Array{3.f}), frozen(Array{4.f}, false);
    Adam opt({Adam::Group{{w, frozen}, AdamOptions(0.1).amsgrad(true)},
              Adam::Group{{b}, AdamOptions(0.2)}});
    w.set_grad(Array{{1.f, 1.f}});
    b.set_grad(Array{1.f});
    opt.step();
    const OptimizerState sd = opt.state_dict();
    CHECK(sd.optimizer == "Adam");
    REQUIRE(sd.param_groups.size() == 2);
    CHECK(sd.param_groups[0].params == std::vector<std::size_t>{0, 1});
    CHECK(sd.param_groups[1].params == std::vector<std::size_t>{2});
    const HyperParams& h = sd.param_groups[0].options;
    CHECK(std::get<double>(h.at("lr")) == 0.1);
    CHECK(std::get<std::vector<double>>(h.at("betas")) == std::vector<double>{0.9, 0.999});
    CHECK(std::get<double>(h.at("eps")) == 1e-8);
    CHECK(std::get<double>(h.at("weight_decay")) == 0.0);
    CHECK(std::get<bool>(h.at("amsgrad")));
    CHECK_FALSE(std::get<bool>(h.at("maximize")));
    CHECK(h.size() == 6);

    REQUIRE(sd.state.size() == 2);  // the frozen parameter (id 1) has no state
    CHECK(sd.state.count(1) == 0);
    const ParamState& s0 = sd.state.at(0);
    CHECK(s0.step == 1);
    REQUIRE(s0.tensors.size() == 3);
    CHECK(s0.tensors[0].first == "exp_avg");
    CHECK(s0.tensors[1].first == "exp_avg_sq");
    CHECK(s0.tensors[2].first == "max_exp_avg_sq");
    CHECK(s0.find("exp_avg")->shape() == w.shape());
    CHECK(sd.state.at(2).tensors.size() == 2);  // no amsgrad in group 1

    // A snapshot: later steps do not change it (PyTorch's state dict shares storage with the state).
    const Array m_saved = *s0.find("exp_avg");
    w.set_grad(Array{{5.f, 5.f}});
    opt.step();
    CHECK(bit_equal(*s0.find("exp_avg"), m_saved));
  }

  TEST_CASE("SGD's state dict holds momentum buffers and no step count") {
    Parameter p(Array{1.f, 2.f});
    SGD opt({p}, SGDOptions(0.1).momentum(0.9).nesterov(true));
    p.set_grad(Array{1.f, 1.f});
    opt.step();
    const OptimizerState sd = opt.state_dict();
    CHECK_FALSE(sd.state.at(0).step.has_value());
    CHECK(sd.state.at(0).tensors.at(0).first == "momentum_buffer");
    CHECK(std::get<bool>(sd.param_groups[0].options.at("nesterov")));
    CHECK(std::get<double>(sd.param_groups[0].options.at("momentum")) == 0.9);
  }

  TEST_CASE("a state-dict round trip gives identical subsequent steps") {
    Parameter w(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}), b(Array{0.5f, -0.5f, 0.f});
    Adam opt({w, b}, AdamOptions(0.05).amsgrad(true).weight_decay(0.01));
    train(opt, w, b, 3, 1.0f);
    const OptimizerState saved = opt.state_dict();

    Parameter w2(w.data()), b2(b.data());
    Adam restored({w2, b2}, AdamOptions(1.0));  // other options: they come from the state dict
    restored.load_state_dict(saved);
    CHECK(restored.options(0).lr() == 0.05);
    CHECK(restored.options(0).amsgrad());
    train(opt, w, b, 3, 2.0f);
    train(restored, w2, b2, 3, 2.0f);
    CHECK(bit_equal(w.data(), w2.data()));
    CHECK(bit_equal(b.data(), b2.data()));
    CHECK(restored.state(w2)->step == 6);

    SUBCASE("and for SGD with momentum") {
      Parameter p(Array{1.f, -1.f}), q(Array{1.f, -1.f});
      SGD s1({p}, SGDOptions(0.1).momentum(0.9).dampening(0.2));
      for (int s = 0; s < 2; ++s) {
        p.set_grad(Array{0.3f, float(s)});
        s1.step();
      }
      q.mutable_data() = p.data();
      SGD s2({q});
      s2.load_state_dict(s1.state_dict());
      p.set_grad(Array{0.7f, 0.1f});
      q.set_grad(Array{0.7f, 0.1f});
      s1.step();
      s2.step();
      CHECK(bit_equal(p.data(), q.data()));
    }
  }

  TEST_CASE(
      "a state dict given by move is taken, not copied, and check_state_dict checks without "
      "loading") {
    Parameter w(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}), b(Array{0.5f, -0.5f, 0.f});
    Adam opt({w, b}, AdamOptions(0.05).amsgrad(true));
    train(opt, w, b, 2, 1.0f);
    OptimizerState sd = opt.state_dict();
    const float* exp_avg = sd.state.at(0).find("exp_avg")->data();
    const float* vmax = sd.state.at(1).find("max_exp_avg_sq")->data();

    Parameter w2(w.data()), b2(b.data());
    Adam restored({w2, b2});
    restored.check_state_dict(sd);  // passes, and changes nothing
    CHECK(restored.state(w2) == nullptr);
    CHECK(restored.options(0).lr() == 0.001);
    restored.load_state_dict(std::move(sd));
    CHECK(restored.state(w2)->exp_avg.data() == exp_avg);  // the same buffers: moved in
    CHECK(restored.state(b2)->max_exp_avg_sq->data() == vmax);
    train(opt, w, b, 2, 2.0f);
    train(restored, w2, b2, 2, 2.0f);
    CHECK(bit_equal(w.data(), w2.data()));
    CHECK(bit_equal(b.data(), b2.data()));

    OptimizerState bad = opt.state_dict();
    bad.optimizer = "SGD";
    CHECK_THROWS_WITH_AS(
        restored.check_state_dict(bad),
        doctest::Contains("Adam.load_state_dict: expected the state dict of an optimizer of type "
                          "'Adam', got 'SGD'"),
        ValueError);
    CHECK(restored.state(w2)->step == 4);
  }

  TEST_CASE("loaded ids map onto the parameters by position, as in PyTorch") {
    Parameter w(Array{1.f}), b(Array{2.f});
    Adam opt({w, b});
    w.set_grad(Array{1.f});
    opt.step();
    OptimizerState sd = opt.state_dict();
    sd.param_groups[0].params = {10, 20};  // other ids, same positions
    sd.state = {{10, sd.state.at(0)}};
    Adam other({Parameter(Array{1.f}), Parameter(Array{2.f})});
    other.load_state_dict(sd);
    CHECK(other.state_dict().state.at(0).step == 1);
    CHECK(other.state_dict().state.count(1) == 0);
  }

  TEST_CASE("a refused load_state_dict names the problem and leaves the optimizer unchanged") {
    Parameter lut = named(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}, "lut.weight"), b(Array{1.f});
    Adam opt({Adam::Group{{b}, AdamOptions(0.1)}, Adam::Group{{lut}, AdamOptions(0.2)}});
    b.set_grad(Array{1.f});
    lut.set_grad(Array{{1.f, 1.f, 1.f}, {1.f, 1.f, 1.f}});
    opt.step();
    const OptimizerState good = opt.state_dict();
    OptimizerState bad = good;

    SUBCASE("another optimizer's state") {
      bad.optimizer = "SGD";
      CHECK_THROWS_WITH_AS(
          opt.load_state_dict(bad),
          doctest::Contains("Adam.load_state_dict: expected the state dict of an optimizer of type "
                            "'Adam', got 'SGD'"),
          ValueError);
    }
    SUBCASE("a different number of groups") {
      bad.param_groups.pop_back();
      CHECK_THROWS_WITH_AS(
          opt.load_state_dict(bad),
          doctest::Contains("loaded state dict has a different number of parameter groups | "
                            "Adam.load_state_dict: expected 2 groups, got 1"),
          ValueError);
    }
    SUBCASE("a group of another size") {
      bad.param_groups[1].params.push_back(7);
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("loaded state dict contains a parameter group that "
                                             "doesn't match the size of optimizer's group"),
                           ValueError);
    }
    SUBCASE("a state tensor of the wrong shape") {
      bad.state.at(1).tensors[1].second = Array{{1.f, 2.f}, {3.f, 4.f}};
      CHECK_THROWS_WITH_AS(
          opt.load_state_dict(bad),
          doctest::Contains("optimizer state for param 1 ('lut.weight') has shape (2, 2), "
                            "parameter has (2, 3) | Adam.load_state_dict: in state 'exp_avg_sq'"),
          ValueError);
    }
    SUBCASE("a missing state tensor") {
      bad.state.at(0).tensors.pop_back();
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("expected state 'exp_avg_sq' for param 0, got none"),
                           ValueError);
    }
    SUBCASE("an unknown state tensor") {
      bad.state.at(0).tensors.emplace_back("momentum_buffer", Array{0.f});
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("unexpected state 'momentum_buffer'"), ValueError);
    }
    SUBCASE("a missing step count") {
      bad.state.at(0).step.reset();
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("expected a step count in the state of param 0"),
                           ValueError);
    }
    SUBCASE("state for an id that is in no group") {
      bad.state.emplace(9, good.state.at(0));
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("entry for param 9, which is in no parameter group"),
                           ValueError);
    }
    SUBCASE("an invalid hyper-parameter, in the last group") {
      bad.param_groups[1].options["lr"] = -1.0;
      CHECK_THROWS_WITH_AS(
          opt.load_state_dict(bad),
          doctest::Contains("Invalid learning rate: -1.0 | Adam.load_state_dict: param_groups[1]"),
          ValueError);
    }
    SUBCASE("a hyper-parameter of the wrong kind, or missing, or unknown") {
      bad.param_groups[0].options["amsgrad"] = 1.0;
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("expected 'amsgrad' to be true or false"), ValueError);
      bad = good;
      bad.param_groups[0].options.erase("betas");
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("expected a hyper-parameter 'betas', got none"),
                           ValueError);
      bad = good;
      bad.param_groups[0].options["momentum"] = 0.9;
      CHECK_THROWS_WITH_AS(opt.load_state_dict(bad),
                           doctest::Contains("unexpected hyper-parameter 'momentum'"), ValueError);
    }
    // Whatever was refused, the optimizer is exactly as before: same options, same state.
    const OptimizerState after = opt.state_dict();
    CHECK(opt.lr(0) == 0.1);
    CHECK(opt.lr(1) == 0.2);
    REQUIRE(after.state.size() == good.state.size());
    for (const auto& [id, s] : good.state) {
      CHECK(after.state.at(id).step == s.step);
      for (std::size_t k = 0; k < s.tensors.size(); ++k)
        CHECK(bit_equal(after.state.at(id).tensors[k].second, s.tensors[k].second));
    }
  }

  TEST_CASE(
      "loading a state dict without an entry clears that parameter's state, as PyTorch replaces "
      "it") {
    Parameter a(Array{1.f}), b(Array{1.f});
    SGD opt({a, b}, SGDOptions(0.1).momentum(0.5));
    a.set_grad(Array{1.f});
    b.set_grad(Array{1.f});
    opt.step();
    OptimizerState sd = opt.state_dict();
    sd.state.erase(1);
    opt.load_state_dict(sd);
    CHECK(opt.state(a) != nullptr);
    CHECK(opt.state(b) == nullptr);
  }

}  // TEST_SUITE
