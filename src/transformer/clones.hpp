// src/transformer/clones.hpp (private): the Annotated Transformer's clones(module, N), what the
// Encoder and the Decoder share: a stack of N layers, `layer` itself then N - 1 deep copies.
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/core/errors.hpp"
#include "tapegrad/nn/module_list.hpp"

namespace tapegrad::nn::transformer::detail {

/// Appends `layer` and N - 1 copies of it (Layer::clone(): same weights, own parameters) to
/// `layers`. ValueError naming `where` for a null layer or N < 1.
template <class Layer>
void append_clones(ModuleList& layers, const std::shared_ptr<Layer>& layer, std::int64_t N,
                   const char* where) {
  check<ValueError>(layer != nullptr, where, ": expected a layer, got a null pointer");
  check<ValueError>(N >= 1, where, ": expected N >= 1 layers, got ", N);
  layers.push_back(layer);
  for (std::int64_t i = 1; i < N; ++i) layers.push_back(layer->clone());
}

}  // namespace tapegrad::nn::transformer::detail
