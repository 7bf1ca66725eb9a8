// src/transformer/gpt_init.cpp: nanoGPT's initialisation of any module tree (gpt_init.hpp).
#include "tapegrad/transformer/gpt_init.hpp"

#include <algorithm>
#include <cmath>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/linear.hpp"

namespace tapegrad::nn::transformer {

void init_gpt_weights(Module& model, std::int64_t n_layer, Generator& generator,
                      const std::vector<std::string>& residual_projections) {
  check<ValueError>(n_layer >= 1, "init_gpt_weights: expected n_layer >= 1, got ", n_layer);
  autograd::NoGradGuard no_grad;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(n_layer));
  for (auto& [name, module] : model.named_modules()) {
    if (auto* lin = dynamic_cast<Linear*>(module)) {
      const std::string last = name.substr(name.rfind('.') + 1);  // the whole name if no '.'
      const bool residual = std::find(residual_projections.begin(), residual_projections.end(),
                                      last) != residual_projections.end();
      normal_(lin->weight.mutable_data(), 0.0, residual ? residual_std : 0.02, &generator);
      if (lin->bias.defined()) lin->bias.mutable_data().fill(0.0f);
    } else if (auto* emb = dynamic_cast<Embedding*>(module)) {
      normal_(emb->weight.mutable_data(), 0.0, 0.02, &generator);
    }
  }
}

}  // namespace tapegrad::nn::transformer
