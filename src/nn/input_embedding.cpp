// src/nn/input_embedding.cpp: Sequential(Embeddings, PositionalEncoding) with a typed forward.
#include "tapegrad/nn/input_embedding.hpp"

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn {

InputEmbedding::InputEmbedding(std::shared_ptr<Embeddings> embeddings_module,
                               std::shared_ptr<PositionalEncoding> position_module) {
  check<ValueError>(embeddings_module && position_module,
                    "InputEmbedding: expected an Embeddings and a PositionalEncoding, got a null pointer");
  check<ShapeError>(embeddings_module->d_model() == position_module->options().d_model(),
                    "InputEmbedding: expected the same d_model for Embeddings and PositionalEncoding, got ",
                    embeddings_module->d_model(), " and ", position_module->options().d_model());
  embeddings = register_module("0", std::move(embeddings_module));
  position = register_module("1", std::move(position_module));
}

Tensor InputEmbedding::forward(const IndexArray& ids) {
  autograd::ModuleScope scope(type_name(), path());
  return position->forward(embeddings->forward(ids));
}

}  // namespace tapegrad::nn
