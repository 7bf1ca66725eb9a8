// src/nn/parameter_groups.cpp: nn::parameter_groups (parameter_groups.hpp).
#include "tapegrad/nn/parameter_groups.hpp"

#include <set>

#include "tapegrad/nn/embedding.hpp"

namespace tapegrad::nn {

ParameterGroups parameter_groups(const Module& module) {
  std::set<const void*> tables;  // the Embedding modules' weights, by identity (ties share one)
  for (const auto& [name, child] : module.named_modules())
    if (const auto* embedding = dynamic_cast<const Embedding*>(child))
      tables.insert(embedding->weight.impl());
  ParameterGroups groups;
  for (const Parameter& p : module.parameters()) {
    if (!p.requires_grad()) continue;  // frozen: trained by nobody
    const bool decays = p.dim() >= 2 && !tables.contains(p.impl());
    (decays ? groups.decay : groups.no_decay).push_back(p);
  }
  return groups;
}

}  // namespace tapegrad::nn
