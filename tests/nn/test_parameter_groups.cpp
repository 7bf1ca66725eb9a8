// tests/nn/test_parameter_groups.cpp: nn::parameter_groups on a module of one's own: matrices
// decay; biases, norms and embedding tables (a tied one too) do not; every parameter lands in
// exactly one group, once. The GPT's groups: tests/transformer/test_gpt_parameter_groups.cpp.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <tapegrad/nn.hpp>
#include <tapegrad/optim.hpp>

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {
// A learner's model: an embedding whose table the output layer reuses, a Linear with a bias, a
// norm, and a raw 3-D parameter of its own (an ALiBi-like per-head table, say).
struct Mine : Module {
  Mine()
      : emb(register_module("emb", std::make_shared<Embedding>(EmbeddingOptions(10, 4)))),
        proj(register_module("proj", std::make_shared<Linear>(LinearOptions(4, 4)))),
        norm(register_module("norm", std::make_shared<RMSNorm>(RMSNormOptions({4})))),
        head(register_module("head", std::make_shared<TiedLinear>(emb->weight))),
        slopes(register_parameter("slopes", Parameter(Array::from_shape({2, 3, 3})))),
        gain(register_parameter("gain", Parameter(Array{1.0f}))) {}
  std::shared_ptr<Embedding> emb;
  std::shared_ptr<Linear> proj;
  std::shared_ptr<RMSNorm> norm;
  std::shared_ptr<TiedLinear> head;
  Parameter slopes, gain;
};

std::set<std::string> names(const std::vector<Parameter>& ps) {
  std::set<std::string> out;
  for (const Parameter& p : ps) out.insert(p.name());
  return out;
}
}  // namespace

TEST_SUITE("nn.parameter_groups") {
  TEST_CASE("matrices decay, while biases, norms and embedding tables, tied ones too, do not") {
    Mine m;
    const ParameterGroups g = parameter_groups(m);
    CHECK(names(g.decay) == std::set<std::string>{"proj.weight", "slopes"});
    CHECK(names(g.no_decay) == std::set<std::string>{"emb.weight", "proj.bias", "norm.weight", "gain"});
    CHECK(g.decay.size() + g.no_decay.size() == m.parameters().size());  // the tie counted once
    optim::AdamW opt({{g.decay, optim::AdamWOptions(1e-3).weight_decay(0.1)},
                      {g.no_decay, optim::AdamWOptions(1e-3).weight_decay(0.0)}});
  }
}
