// tests/transformer/test_gpt_parameter_groups.cpp: the GPT's optimizer groups are
// nn::parameter_groups' rule (tests/nn/test_parameter_groups.cpp tests the rule itself): its
// Linear weights decay, nothing else.
#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {
std::set<std::string> names(const std::vector<Parameter>& ps) {
  std::set<std::string> out;
  for (const Parameter& p : ps) out.insert(p.name());
  return out;
}
}  // namespace

TEST_SUITE("nn.parameter_groups") {
  TEST_CASE("the GPT's groups are the rule's: its Linear weights decay, nothing else") {
    namespace tt = nn::transformer;
    tt::GPT model(tt::GPTConfig(20, 8).n_layer(2).n_head(2).n_embd(8).mlp("swiglu"),
                  std::make_shared<Generator>(0));
    const ParameterGroups g = model.parameter_groups(), free = parameter_groups(model);
    CHECK(names(g.decay) == names(free.decay));
    CHECK(names(g.no_decay) == names(free.no_decay));
    std::set<const void*> linear_weights;
    for (const auto& [name, child] : model.named_modules())
      if (const auto* lin = dynamic_cast<const Linear*>(child)) linear_weights.insert(lin->weight.impl());
    for (const Parameter& p : g.decay) CHECK(linear_weights.contains(p.impl()));
    CHECK(g.decay.size() == linear_weights.size());
  }
}
