// include/tapegrad/nn/parameter_groups.hpp
//
// Which parameters weight decay applies to, for any Module: GPT-2's rule, as nanoGPT's
// configure_optimizers applies it. The matrices (every parameter of 2 or more dimensions) decay;
// biases and norms (1-D) and the embedding tables (the weights of Embedding modules, and so a
// token table tied to the output layer) do not: a table's row moves only when its token is seen,
// and decay would shrink the rows of rare tokens at every step. Frozen parameters (requires_grad
// false: the base model under LoRA) are in neither group, as nanoGPT's configure_optimizers leaves
// them out: an optimizer never holds them. A module does not know its optimizer; the caller builds
// it from the groups:
//
//     const nn::ParameterGroups g = nn::parameter_groups(model);
//     optim::AdamW opt({{g.decay, optim::AdamWOptions(lr).weight_decay(0.1)},
//                       {g.no_decay, optim::AdamWOptions(lr).weight_decay(0.0)}});
#pragma once

#include <vector>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// A model's parameters in two groups: those weight decay applies to, and the others.
struct ParameterGroups {
  std::vector<Parameter> decay, no_decay;
};

/// module.parameters() that require grad (each once, in its order) split by the rule above.
ParameterGroups parameter_groups(const Module& module);

}  // namespace tapegrad::nn
