// tests/nn/test_lora.cpp: LoRA adapters on Linear layers (PEFT's lora.Linear): initialisation,
// names, values, gradients (gradcheck of A and B), the frozen weight's absent gradient and tape
// work, the optimizer's groups, targets on a model and their refusals, dropout on the adapter's
// input only, merging, printing.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;
using tapegrad::testing::bit_equal;

namespace {

// A model shaped like a Llama's attention and MLP: Linears at several depths, and a module that
// is not a Linear.
struct Attention : Module {
  Attention()
      : q_proj(register_module("q_proj", std::make_shared<Linear>(LinearOptions(6, 4).bias(false),
                                                                  std::make_shared<Generator>(1)))),
        v_proj(register_module("v_proj", std::make_shared<Linear>(LinearOptions(6, 2),
                                                                  std::make_shared<Generator>(2)))),
        o_proj(register_module(
            "o_proj",
            std::make_shared<Linear>(LinearOptions(4, 6), std::make_shared<Generator>(3)))) {}
  std::shared_ptr<Linear> q_proj, v_proj, o_proj;
};

struct Tiny : Module {
  Tiny()
      : norm(register_module("norm", std::make_shared<RMSNorm>(6))),
        self_attn(register_module("self_attn", std::make_shared<Attention>())),
        lm_head(register_module(
            "lm_head",
            std::make_shared<Linear>(LinearOptions(6, 3), std::make_shared<Generator>(4)))) {}
  // Uses every Linear, so that a loss reaches each of them.
  Tensor forward(const Tensor& x) {
    const Tensor h = norm->forward(x);
    const Tensor q = self_attn->q_proj->forward(h);
    const Tensor v = self_attn->v_proj->forward(h);
    return ops::sum(lm_head->forward(h + self_attn->o_proj->forward(q))) + ops::sum(v);
  }
  std::shared_ptr<RMSNorm> norm;
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<Linear> lm_head;
};

std::vector<std::string> names_of(const Module& m) {
  std::vector<std::string> out;
  for (const auto& [n, p] : m.named_parameters()) out.push_back(n);
  return out;
}

// B filled with values drawn from a seed, so that the adapter changes the output.
void randomise_b(Linear& layer, std::uint64_t seed) {
  Generator g(seed);
  layer.lora_B->weight.mutable_data() = randn(layer.lora_B->weight.shape(), &g);
}

}  // namespace

TEST_SUITE("nn.lora") {
  TEST_CASE(
      "a new adapter changes nothing: B is zeros and A is drawn as a Linear(in, r)'s weight") {
    Linear lin(LinearOptions(6, 5), std::make_shared<Generator>(7));
    const Tensor x = testing::input({2, 6}, 11, false);
    const Array before = lin.forward(x).data();
    lin.add_lora(LoRAOptions(3), std::make_shared<Generator>(42));
    REQUIRE(lin.has_lora());
    CHECK(lin.lora_A->weight.shape() == Shape{3, 6});
    CHECK(lin.lora_B->weight.shape() == Shape{5, 3});
    CHECK(bit_equal(lin.lora_B->weight.data(), xt::zeros<float>({5, 3})));
    // PEFT: kaiming_uniform_(a = sqrt(5)) on lora_A, which is nn.Linear's own draw: U(-1/sqrt(in),
    // 1/sqrt(in)), the rule of a Linear(6, 3) without bias drawn from the same seed.
    Linear reference(LinearOptions(6, 3).bias(false), std::make_shared<Generator>(42));
    CHECK(bit_equal(lin.lora_A->weight.data(), reference.weight.data()));
    CHECK_FALSE(lin.lora_A->bias.defined());
    CHECK_FALSE(lin.lora_B->bias.defined());
    CHECK(bit_equal(lin.forward(x).data(), before));
  }

  TEST_CASE("the adapter's parameters have PEFT's names, under the layer's path") {
    Tiny model;
    const auto adapted = add_lora(model, {"q_proj", "v_proj"}, LoRAOptions(2));
    CHECK(adapted == std::vector<std::string>{"self_attn.q_proj", "self_attn.v_proj"});
    CHECK(names_of(model) ==
          std::vector<std::string>{"norm.weight", "self_attn.q_proj.weight",
                                   "self_attn.q_proj.lora_A.weight",
                                   "self_attn.q_proj.lora_B.weight", "self_attn.v_proj.weight",
                                   "self_attn.v_proj.bias", "self_attn.v_proj.lora_A.weight",
                                   "self_attn.v_proj.lora_B.weight", "self_attn.o_proj.weight",
                                   "self_attn.o_proj.bias", "lm_head.weight", "lm_head.bias"});
    CHECK(model.self_attn->q_proj->lora_A->weight.name() == "self_attn.q_proj.lora_A.weight");
    const StateDict sd = model.state_dict();
    CHECK(sd.contains("self_attn.v_proj.lora_B.weight"));
    const auto layers = lora_layers(model);
    REQUIRE(layers.size() == 2);
    CHECK(layers[0].first == "self_attn.q_proj");
    CHECK(layers[0].second == model.self_attn->q_proj.get());
  }

  TEST_CASE("forward adds (alpha / r) B A x to W x + b") {
    Linear lin(LinearOptions(3, 2), std::make_shared<Generator>(1));
    lin.add_lora(LoRAOptions(2).lora_alpha(3.0), std::make_shared<Generator>(2));
    randomise_b(lin, 9);
    const Array x{{1.0f, -2.0f, 0.5f}};
    const Array& W = lin.weight.data();
    const Array& b = lin.bias.data();
    const Array& A = lin.lora_A->weight.data();
    const Array& B = lin.lora_B->weight.data();
    Array expected = Array::from_shape({1, 2});
    for (std::size_t o = 0; o < 2; ++o) {
      double base = b(o), update = 0.0;
      for (std::size_t i = 0; i < 3; ++i) base += double(W(o, i)) * x(0, i);
      for (std::size_t k = 0; k < 2; ++k) {
        double ax = 0.0;
        for (std::size_t i = 0; i < 3; ++i) ax += double(A(k, i)) * x(0, i);
        update += double(B(o, k)) * ax;
      }
      expected(0, o) = float(base + 1.5 * update);  // alpha / r = 3 / 2
    }
    CHECK(lin.lora_options().scaling() == 1.5);
    CHECK(all_close(lin.forward(Tensor(x)).data(), expected, 1e-5, 1e-5));
  }

  TEST_CASE("rsLoRA scales by alpha / sqrt(r)") {
    CHECK(LoRAOptions(4).lora_alpha(8).scaling() == 2.0);
    CHECK(LoRAOptions(4).lora_alpha(8).use_rslora(true).scaling() == 4.0);
    CHECK(LoRAOptions(16).lora_alpha(32).scaling() == 2.0);
  }

  TEST_CASE("the gradients of A, B and x match finite differences") {
    Linear lin(LinearOptions(4, 3), std::make_shared<Generator>(1));
    lin.add_lora(LoRAOptions(2).lora_alpha(5.0), std::make_shared<Generator>(2));
    randomise_b(lin, 3);
    const Tensor x = testing::input({2, 4}, 5);
    testing::check_gradients([&](const std::vector<Tensor>& t) { return lin.forward(t[0]); },
                             {x, lin.lora_A->weight, lin.lora_B->weight});
  }

  TEST_CASE("the frozen weight gets no gradient, and no tape entry computes one") {
    Linear lin(LinearOptions(4, 3), std::make_shared<Generator>(1));
    lin.add_lora(LoRAOptions(2), std::make_shared<Generator>(2));
    randomise_b(lin, 3);
    CHECK_FALSE(lin.weight.requires_grad());
    CHECK_FALSE(lin.bias.requires_grad());
    CHECK(lin.lora_A->weight.requires_grad());
    CHECK(lin.lora_B->weight.requires_grad());
    SUBCASE(
        "an input that needs no gradient: one lora_linear entry, its frozen weight needs none") {
      const Tensor loss = ops::sum(lin.forward(testing::input({2, 4}, 5, false)));
      std::size_t lora_linears = 0, linears = 0;
      for (const autograd::TapeEntry& e : autograd::tape_of(loss).entries()) {
        for (const auto& in : e.inputs)
          if (in.name == "weight" || in.name == "bias") CHECK_FALSE(in.requires_grad);
        lora_linears += e.op == "lora_linear";
        linears += e.op == "linear";
      }
      CHECK(lora_linears == 1);  // the base product and the adapter's two, in one entry
      CHECK(linears == 0);
      loss.backward();
      CHECK_FALSE(lin.weight.has_grad());
      CHECK(lin.lora_A->weight.has_grad());
    }
    SUBCASE("an input that needs one: the base product's entry sees a weight that needs none") {
      const Tensor x = testing::input({2, 4}, 5);
      const Tensor loss = ops::sum(lin.forward(x));
      for (const autograd::TapeEntry& e : autograd::tape_of(loss).entries())
        for (const auto& in : e.inputs)
          if (in.name == "weight") CHECK_FALSE(in.requires_grad);
      loss.backward();
      CHECK(x.has_grad());
    }
    CHECK_FALSE(lin.weight.has_grad());
    CHECK_FALSE(lin.bias.has_grad());
    CHECK(lin.lora_A->weight.has_grad());
    CHECK(lin.lora_B->weight.has_grad());
  }

  TEST_CASE("only the adapters train: the groups and the optimizer's state hold A and B alone") {
    Tiny model;
    add_lora(model, {"q_proj", "v_proj"}, LoRAOptions(2), std::make_shared<Generator>(3));
    for (const auto& [name, p] : model.named_parameters())
      CHECK_MESSAGE(p.requires_grad() == (name.find(".lora_") != std::string::npos), name);
    const ParameterGroups groups = parameter_groups(model);
    CHECK(groups.decay.size() == 4);  // the four adapter matrices
    CHECK(groups.no_decay.empty());
    // An optimizer given every parameter still keeps state for the adapters only: the frozen ones
    // never have a gradient.
    randomise_b(*model.self_attn->q_proj, 1);
    randomise_b(*model.self_attn->v_proj, 2);
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
    model.forward(testing::input({2, 6}, 8, false)).backward();
    opt.step();
    std::vector<std::size_t> ids;
    for (const auto& [id, state] : opt.state_dict().state) ids.push_back(id);
    std::vector<std::size_t> adapters;
    const auto params = model.named_parameters();
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i].first.find(".lora_") != std::string::npos) adapters.push_back(i);
    CHECK(ids == adapters);
  }

  TEST_CASE("dropout drops the adapter's input only") {
    Linear lin(LinearOptions(8, 4), std::make_shared<Generator>(1));
    lin.add_lora(LoRAOptions(2).lora_dropout(0.9), std::make_shared<Generator>(2));
    const Tensor x = testing::input({5, 8}, 5, false);
    const Array base = ops::linear(x, lin.weight, lin.bias).data();
    lin.train();
    CHECK(bit_equal(lin.forward(x).data(), base));  // B = 0: the base output, undropped
    randomise_b(lin, 3);
    const Array trained = lin.forward(x).data();
    // The same sum with the mask of that forward applied to the adapter's input alone.
    const auto& mask = lin.lora_dropout->last_mask();
    Array dropped = x.data();
    for (std::size_t i = 0; i < dropped.size(); ++i)
      dropped.data()[i] = mask.data()[i] ? dropped.data()[i] / 0.1f : 0.0f;
    const Tensor update = lin.lora_B->forward(lin.lora_A->forward(Tensor(dropped)));
    CHECK(all_close(trained, (Tensor(base) + update * 4.0).data(), 1e-5, 1e-5));  // alpha 8 / r 2
    lin.eval();
    CHECK_FALSE(bit_equal(lin.forward(x).data(), trained));  // eval mode drops nothing
  }

  TEST_CASE("add_lora on a model refuses what cannot be adapted, and changes nothing then") {
    Tiny model;
    const std::vector<std::string> before = names_of(model);
    CHECK_THROWS_WITH_AS(add_lora(model, {"q_proj", "k_proj"}, LoRAOptions(2)),
                         doctest::Contains("target module 'k_proj' matches no module of the model; "
                                           "expected a name its Linears' paths end with: lm_head, "
                                           "o_proj, q_proj, v_proj"),
                         ValueError);
    CHECK_THROWS_WITH_AS(add_lora(model, {"proj"}, LoRAOptions(2)),
                         doctest::Contains("target module 'proj' matches no module"), ValueError);
    CHECK_THROWS_WITH_AS(
        add_lora(model, {"self_attn"}, LoRAOptions(2)),
        doctest::Contains("add_lora: expected target modules that are Linears, got "
                          "Attention 'self_attn' (matching 'self_attn')"),
        ValueError);
    CHECK_THROWS_WITH_AS(add_lora(model, {}, LoRAOptions(2)),
                         doctest::Contains("expected at least one target module"), ValueError);
    CHECK_THROWS_WITH_AS(add_lora(model, {"q_proj"}, LoRAOptions(0)),
                         doctest::Contains("LoRAOptions: expected r >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(add_lora(model, {"q_proj"}, LoRAOptions(2).lora_alpha(-1)),
                         doctest::Contains("expected a finite lora_alpha > 0, got -1.0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(add_lora(model, {"q_proj"}, LoRAOptions(2).lora_dropout(1.5)),
                         doctest::Contains("expected lora_dropout in [0, 1], got 1.5"), ValueError);
    CHECK(names_of(model) == before);
    for (const Parameter& p : model.parameters()) CHECK(p.requires_grad());
    add_lora(model, {"self_attn.q_proj"}, LoRAOptions(2));
    CHECK_THROWS_WITH_AS(add_lora(model, {"q_proj", "o_proj"}, LoRAOptions(2)),
                         doctest::Contains("got 'self_attn.q_proj', which has one (r 2)"),
                         ValueError);
    CHECK_FALSE(model.self_attn->o_proj->has_lora());
    CHECK_THROWS_WITH_AS(model.self_attn->q_proj->add_lora(LoRAOptions(2)),
                         doctest::Contains("lora.Linear 'self_attn.q_proj'.add_lora: expected a "
                                           "Linear without an adapter"),
                         ValueError);
  }

  TEST_CASE("a target names a module as PEFT matches it: the whole path or a suffix after a dot") {
    CHECK(matches_target("model.layers.0.self_attn.q_proj", "q_proj"));
    CHECK(matches_target("model.layers.0.self_attn.q_proj", "self_attn.q_proj"));
    CHECK(matches_target("q_proj", "q_proj"));
    CHECK_FALSE(matches_target("model.layers.0.self_attn.q_proj", "proj"));
    CHECK_FALSE(matches_target("model.layers.0.self_attn.xq_proj", "q_proj"));
    CHECK_FALSE(matches_target("model.layers.0.self_attn.q_proj", ""));
  }

  TEST_CASE("merge_lora folds (alpha / r) B A into the weight and leaves a plain Linear") {
    Tiny model;
    add_lora(model, {"q_proj", "v_proj"}, LoRAOptions(2).lora_alpha(6),
             std::make_shared<Generator>(5));
    randomise_b(*model.self_attn->q_proj, 1);
    randomise_b(*model.self_attn->v_proj, 2);
    const Array A = model.self_attn->q_proj->lora_A->weight.data(),
                B = model.self_attn->q_proj->lora_B->weight.data(),
                W = model.self_attn->q_proj->weight.data();
    const Tensor x = testing::input({3, 6}, 8, false);
    const Array with_adapter = model.forward(x).data();
    CHECK(merge_lora(model) == 2);
    Array expected = W;
    for (std::size_t o = 0; o < 4; ++o)
      for (std::size_t i = 0; i < 6; ++i)
        expected(o, i) += float(3.0 * (double(B(o, 0)) * A(0, i) + double(B(o, 1)) * A(1, i)));
    CHECK(all_close(model.self_attn->q_proj->weight.data(), expected, 1e-6, 1e-6));
    CHECK(all_close(model.forward(x).data(), with_adapter, 1e-5, 1e-5));
    CHECK(names_of(model) ==
          std::vector<std::string>{"norm.weight", "self_attn.q_proj.weight",
                                   "self_attn.v_proj.weight", "self_attn.v_proj.bias",
                                   "self_attn.o_proj.weight", "self_attn.o_proj.bias",
                                   "lm_head.weight", "lm_head.bias"});
    CHECK(lora_layers(model).empty());
    CHECK_FALSE(model.self_attn->q_proj->has_lora());
    CHECK(model.self_attn->q_proj->repr() == "Linear(in_features=6, out_features=4, bias=False)");
    CHECK_FALSE(model.self_attn->q_proj->weight.requires_grad());  // still frozen, as in PEFT
    CHECK_THROWS_WITH_AS(model.self_attn->q_proj->merge_lora(),
                         doctest::Contains("expected a Linear with an adapter, got one without"),
                         ValueError);
  }

  TEST_CASE("a layer with an adapter prints as PEFT's lora.Linear, with its three children") {
    Linear lin(LinearOptions(6, 4).bias(false));
    lin.add_lora(LoRAOptions(2).lora_dropout(0.05));
    CHECK(lin.repr() ==
          "lora.Linear(\n"
          "  in_features=6, out_features=4, bias=False\n"
          "  (lora_dropout): Dropout(p=0.05, inplace=False)\n"
          "  (lora_A): Linear(in_features=6, out_features=2, bias=False)\n"
          "  (lora_B): Linear(in_features=2, out_features=4, bias=False)\n"
          ")");
  }

  TEST_CASE("a model with adapters saves and loads its state dict, adapters included") {
    Tiny a, b;
    add_lora(a, {"q_proj"}, LoRAOptions(2), std::make_shared<Generator>(1));
    add_lora(b, {"q_proj"}, LoRAOptions(2), std::make_shared<Generator>(2));
    randomise_b(*a.self_attn->q_proj, 3);
    b.load_state_dict(a.state_dict());
    CHECK(bit_equal(b.self_attn->q_proj->lora_B->weight.data(),
                    a.self_attn->q_proj->lora_B->weight.data()));
    CHECK(bit_equal(b.self_attn->q_proj->lora_A->weight.data(),
                    a.self_attn->q_proj->lora_A->weight.data()));
  }
}
