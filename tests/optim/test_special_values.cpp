// tests/optim/test_special_values.cpp: what the optimizers and clip_grad_norm_ make of a gradient
// holding NaN and the infinities, as PyTorch 1.13 does: SGD (plain, momentum with weight decay,
// Nesterov), Adam (plain; L2 weight decay with AMSGrad), AdamW (plain; AMSGrad), and SparseAdam and
// SGD on a row-sparse gradient, each over two steps, the first with the special gradient and the
// second with a plain one, the parameter and every state tensor checked after each; then
// clip_grad_norm_ with a NaN or an infinite gradient under the 2-norm and the inf-norm. A NaN gradient must reach the parameter,
// never be dropped by a max() or a comparison on the way. The goldens come from
// scripts/golden/special_values_optim.py; the suite runs on every kernel set (optim.*).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/core.hpp>
#include <tapegrad/optim.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;

namespace {
// A finite value within 1e-5 of the golden's size: the state is a few float roundings from
// PyTorch's (testing::same_special).
constexpr float kTolerance = 1e-5f;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct StepGolden {
  std::vector<float> theta;
  std::vector<std::pair<std::string, std::vector<float>>> state;  // PyTorch's state[p] names
};
struct OptimGolden {
  const char* name;
  std::vector<StepGolden> steps;
};

// clang-format off
const std::vector<OptimGolden> kOptimGoldens = {
    // torch 1.13.0a0
    // theta0 = {1.0f, -2.0f, 0.5f, 3.0f, 0.0f} then the gradients {kNaN, kInf, -kInf, 0.5f, 0.0f} and {0.1f, -0.2f, 0.3f, 0.4f, 0.5f}
    {"sgd", {{{kNaN, -kInf, kInf, 2.95000005f, 0.0f}, {}}, {{kNaN, -kInf, kInf, 2.91000009f, -0.0500000007f}, {}}}},
    {"sgd_momentum_weight_decay", {{{kNaN, -kInf, kInf, 2.94700003f, 0.0f}, {{"momentum_buffer", {kNaN, kInf, -kInf, 0.529999971f, 0.0f}}}}, {{kNaN, kNaN, kNaN, 2.85635304f, -0.0500000007f}, {{"momentum_buffer", {kNaN, kNaN, kNaN, 0.906469941f, 0.5f}}}}}},
    {"sgd_nesterov", {{{kNaN, -kInf, kInf, 2.90499997f, 0.0f}, {{"momentum_buffer", {kNaN, kInf, -kInf, 0.5f, 0.0f}}}}, {{kNaN, -kInf, kInf, 2.78850007f, -0.0949999988f}, {{"momentum_buffer", {kNaN, kInf, -kInf, 0.850000024f, 0.5f}}}}}},
    {"adam", {{{kNaN, kNaN, kNaN, 2.9000001f, 0.0f}, {{"exp_avg", {kNaN, kInf, -kInf, 0.0500000007f, 0.0f}}, {"exp_avg_sq", {kNaN, kInf, kInf, 0.000250000012f, 0.0f}}}}, {{kNaN, kNaN, kNaN, 2.80118752f, -0.0744136795f}, {{"exp_avg", {kNaN, kInf, -kInf, 0.0850000009f, 0.0500000007f}}, {"exp_avg_sq", {kNaN, kInf, kInf, 0.000409750006f, 0.000250000012f}}}}}},
    {"adam_weight_decay_amsgrad", {{{kNaN, kNaN, kNaN, 2.9000001f, 0.0f}, {{"exp_avg", {kNaN, kInf, -kInf, 0.0529999994f, 0.0f}}, {"exp_avg_sq", {kNaN, kInf, kInf, 0.000280899985f, 0.0f}}, {"max_exp_avg_sq", {kNaN, kInf, kInf, 0.000280899985f, 0.0f}}}}, {{kNaN, kNaN, kNaN, 2.8010962f, -0.0744136795f}, {{"exp_avg", {kNaN, kNaN, kNaN, 0.0905999988f, 0.0500000007f}}, {"exp_avg_sq", {kNaN, kNaN, kNaN, 0.000464660086f, 0.000250000012f}}, {"max_exp_avg_sq", {kNaN, kNaN, kNaN, 0.000464660086f, 0.000250000012f}}}}}},
    {"adamw", {{{kNaN, kNaN, kNaN, 2.89700007f, 0.0f}, {{"exp_avg", {kNaN, kInf, -kInf, 0.0500000007f, 0.0f}}, {"exp_avg_sq", {kNaN, kInf, kInf, 0.000250000012f, 0.0f}}}}, {{kNaN, kNaN, kNaN, 2.79529047f, -0.0744136795f}, {{"exp_avg", {kNaN, kInf, -kInf, 0.0850000009f, 0.0500000007f}}, {"exp_avg_sq", {kNaN, kInf, kInf, 0.000409750006f, 0.000250000012f}}}}}},
    {"adamw_amsgrad", {{{kNaN, kNaN, kNaN, 2.89700007f, 0.0f}, {{"exp_avg", {kNaN, kInf, -kInf, 0.0500000007f, 0.0f}}, {"exp_avg_sq", {kNaN, kInf, kInf, 0.000250000012f, 0.0f}}, {"max_exp_avg_sq", {kNaN, kInf, kInf, 0.000250000012f, 0.0f}}}}, {{kNaN, kNaN, kNaN, 2.79529047f, -0.0744136795f}, {{"exp_avg", {kNaN, kInf, -kInf, 0.0850000009f, 0.0500000007f}}, {"exp_avg_sq", {kNaN, kInf, kInf, 0.000409750006f, 0.000250000012f}}, {"max_exp_avg_sq", {kNaN, kInf, kInf, 0.000409750006f, 0.000250000012f}}}}}},
    // sparse_adam: theta0 = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f} ; rows [([0, 2], [[nan, 1.0], [inf, -inf]]), ([1, 2], [[0.5, 0.5], [0.1, 0.2]])]
    {"sparse_adam", {{{kNaN, 1.9000001f, 3.0f, 4.0f, kNaN, kNaN}, {{"exp_avg", {kNaN, 0.100000001f, 0.0f, 0.0f, kInf, -kInf}}, {"exp_avg_sq", {kNaN, 0.00100000005f, 0.0f, 0.0f, kInf, kInf}}}}, {{kNaN, 1.9000001f, 2.92558646f, 3.92558646f, kNaN, kNaN}, {{"exp_avg", {kNaN, 0.100000001f, 0.0500000007f, 0.0500000007f, kNaN, kNaN}}, {"exp_avg_sq", {kNaN, 0.00100000005f, 0.000250000012f, 0.000250000012f, kNaN, kNaN}}}}}},
    {"sgd_sparse", {{{kNaN, 1.89999998f, 3.0f, 4.0f, -kInf, kInf}, {}}, {{kNaN, 1.89999998f, 2.95000005f, 3.95000005f, -kInf, kInf}, {}}}},
};

struct ClipGolden {
  const char* name;
  float norm_type;
  std::vector<float> a, b;
  float total;
  std::vector<float> a_after, b_after;
};
const std::vector<ClipGolden> kClipGoldens = {
    // clip_grad_norm_: name, norm_type, a, b, then the total norm and a and b after clipping
    {"nan", 2.0f, {kNaN, 1.0f}, {3.0f, 4.0f}, kNaN, {kNaN, kNaN}, {kNaN, kNaN}},
    {"inf", 2.0f, {kInf, 1.0f}, {3.0f, 4.0f}, kInf, {kNaN, 0.0f}, {0.0f, 0.0f}},
    {"neg_inf", 2.0f, {-kInf, 1.0f}, {3.0f, 4.0f}, kInf, {kNaN, 0.0f}, {0.0f, 0.0f}},
    {"nan_and_inf", 2.0f, {kNaN, kInf}, {3.0f, 4.0f}, kNaN, {kNaN, kNaN}, {kNaN, kNaN}},
    {"nan_inf_norm", kInf, {kNaN, 1.0f}, {3.0f, 4.0f}, kNaN, {kNaN, kNaN}, {kNaN, kNaN}},
    {"neg_inf_inf_norm", kInf, {-kInf, 1.0f}, {3.0f, 4.0f}, kInf, {kNaN, 0.0f}, {0.0f, 0.0f}},
};
// clang-format on

const std::vector<float> kTheta0 = {1.0f, -2.0f, 0.5f, 3.0f, 0.0f};
const std::vector<std::vector<float>> kGrads = {{kNaN, kInf, -kInf, 0.5f, 0.0f},
                                                {0.1f, -0.2f, 0.3f, 0.4f, 0.5f}};

// What this kernel set should hold where PyTorch 1.13 holds `want`. One difference, on purpose
// (docs/semantics.md#optimizers): the fast sets' Adam moves m by PyTorch 2.x's lerp, so an
// infinite m meeting a finite gradient becomes NaN (inf - inf) where 1.13 and the reference keep
// the infinity.
std::vector<float> on_this_set(const AdamState&, const std::string& field, std::size_t step,
                               std::vector<float> want) {
  if (cpu_capability() == CpuCapability::reference || field != "exp_avg" || step == 0) return want;
  for (float& w : want)
    if (std::isinf(w)) w = kNaN;
  return want;
}
std::vector<float> on_this_set(const auto&, const std::string&, std::size_t,
                               std::vector<float> want) {
  return want;
}

void check_values(const char* what, const Array& got, const std::vector<float>& want) {
  const std::string field = what;
  CAPTURE(field);
  CAPTURE(testing::show(got));
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(testing::same_special(got.flat(i), want[i], kTolerance));
  }
}

Array vector_array(const std::vector<float>& v) {
  Array a = Array::from_shape({v.size()});
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

const OptimGolden& golden(const std::string& name) {
  for (const OptimGolden& g : kOptimGoldens)
    if (name == g.name) return g;
  FAIL("no golden named ", name);
  return kOptimGoldens.front();
}

// The state tensor PyTorch calls `field`, of SGD's or Adam's state.
const Array& field_of(const SGDState& s, const std::string& field) {
  REQUIRE(field == "momentum_buffer");
  return s.momentum_buffer;
}
const Array& field_of(const AdamState& s, const std::string& field) {
  if (field == "exp_avg") return s.exp_avg;
  if (field == "exp_avg_sq") return s.exp_avg_sq;
  REQUIRE(field == "max_exp_avg_sq");
  REQUIRE(s.max_exp_avg_sq.has_value());
  return *s.max_exp_avg_sq;
}
const Array& field_of(const SparseAdamState& s, const std::string& field) {
  if (field == "exp_avg") return s.exp_avg;
  REQUIRE(field == "exp_avg_sq");
  return s.exp_avg_sq;
}

// Steps opt over the golden's gradients (set by set_grad(p, step)), checking p and the state.
template <class Opt>
void check_steps(Opt& opt, const Parameter& p, const OptimGolden& g, auto set_grad) {
  const std::string name = g.name;
  CAPTURE(name);
  for (std::size_t s = 0; s < g.steps.size(); ++s) {
    CAPTURE(s);
    set_grad(p, s);
    opt.step();
    check_values("theta", p.data(), g.steps[s].theta);
    const auto* state = opt.state(p);
    if (g.steps[s].state.empty()) continue;
    REQUIRE(state != nullptr);
    for (const auto& [field, want] : g.steps[s].state)
      check_values(field.c_str(), field_of(*state, field), on_this_set(*state, field, s, want));
  }
}

template <class Opt, class Options>
void check_dense(const std::string& name, const Options& options) {
  Parameter p(vector_array(kTheta0));
  Opt opt({p}, options);
  check_steps(opt, p, golden(name), [](const Parameter& q, std::size_t s) {
    q.set_grad(vector_array(kGrads[s]));
  });
}
}  // namespace

TEST_SUITE("optim.special_values") {
  TEST_CASE("SGD carries NaN and the infinities into the parameter and the momentum as PyTorch") {
    check_dense<SGD>("sgd", SGDOptions(0.1));
    check_dense<SGD>("sgd_momentum_weight_decay", SGDOptions(0.1).momentum(0.9).weight_decay(0.01));
    check_dense<SGD>("sgd_nesterov", SGDOptions(0.1).momentum(0.9).nesterov(true));
  }

  TEST_CASE("Adam and AdamW carry NaN and the infinities into the parameter and the moments as "
            "PyTorch, AMSGrad's maximum included") {
    check_dense<Adam>("adam", AdamOptions(0.1));
    check_dense<Adam>("adam_weight_decay_amsgrad", AdamOptions(0.1).weight_decay(0.01).amsgrad(true));
    check_dense<AdamW>("adamw", AdamWOptions(0.1));
    check_dense<AdamW>("adamw_amsgrad", AdamWOptions(0.1).amsgrad(true));
  }

  TEST_CASE("SparseAdam and SGD carry NaN and the infinities of a row-sparse gradient into the "
            "touched rows as PyTorch") {
    auto rows = [](const Parameter& q, std::size_t s) {
      q.zero_grad();
      if (s == 0)
        q.accumulate_grad(RowSparseGrad{IndexArray{0, 2}, Array{{kNaN, 1.0f}, {kInf, -kInf}}, {3, 2}});
      else
        q.accumulate_grad(RowSparseGrad{IndexArray{1, 2}, Array{{0.5f, 0.5f}, {0.1f, 0.2f}}, {3, 2}});
    };
    {
      Parameter p(Array{{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}});
      SparseAdam opt({p}, SparseAdamOptions(0.1));
      check_steps(opt, p, golden("sparse_adam"), rows);
    }
    {
      Parameter p(Array{{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}});
      SGD opt({p}, SGDOptions(0.1));
      check_steps(opt, p, golden("sgd_sparse"), rows);
    }
  }

  TEST_CASE("clip_grad_norm_ returns a NaN or infinite total and scales by it as PyTorch: an "
            "infinite gradient becomes NaN (inf * 0), a NaN total makes every gradient NaN") {
    for (const ClipGolden& g : kClipGoldens) {
      const std::string name = g.name;
      CAPTURE(name);
      Parameter a(Array{0.0f, 0.0f}), b(Array{0.0f, 0.0f});
      a.set_grad(vector_array(g.a));
      b.set_grad(vector_array(g.b));
      const double total = clip_grad_norm_({a, b}, 1.0, g.norm_type);
      CAPTURE(total);
      CHECK(testing::same_special(static_cast<float>(total), g.total, kTolerance));
      check_values("a", a.grad(), g.a_after);
      check_values("b", b.grad(), g.b_after);
    }
  }
}
