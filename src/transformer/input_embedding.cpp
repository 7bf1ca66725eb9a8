// src/transformer/input_embedding.cpp: Sequential(Embeddings, PositionalEncoding) with a typed forward.
#include "tapegrad/transformer/input_embedding.hpp"

#include <cmath>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/embedding.hpp"

namespace tapegrad::nn::transformer {

InputEmbedding::InputEmbedding(std::shared_ptr<Embeddings> embeddings_module,
                               std::shared_ptr<PositionalEncoding> position_module) {
  check<ValueError>(
      embeddings_module && position_module,
      "InputEmbedding: expected an Embeddings and a PositionalEncoding, got a null pointer");
  check<ShapeError>(
      embeddings_module->d_model() == position_module->options().d_model(),
      "InputEmbedding: expected the same d_model for Embeddings and PositionalEncoding, got ",
      embeddings_module->d_model(), " and ", position_module->options().d_model());
  embeddings = register_module("0", std::move(embeddings_module));
  position = register_module("1", std::move(position_module));
}

Tensor InputEmbedding::forward(const IndexArray& ids) {
  // position(embeddings(ids)) = dropout(lut(ids) * sqrt(d_model) + pe[:, :T]), in one pass
  // (ops::embedding_add_rows_dropout, bit for bit the two modules' result). Ids that are not
  // (B, T) with T <= max_len go through the two modules, whose messages name the problem.
  autograd::ModuleScope scope(type_name(), path());
  const std::size_t max_len = static_cast<std::size_t>(position->options().max_len());
  if (ids.dimension() != 2 || ids.shape()[1] > max_len)
    return position->forward(embeddings->forward(ids));
  Dropout& dropout = *position->dropout;
  const double p = dropout.options().p();
  const bool drops = dropout.is_training() && p != 0.0 && ids.size() != 0;
  const std::size_t d_model = static_cast<std::size_t>(embeddings->d_model());
  const ops::DropoutStream stream =
      drops ? dropout.next_stream_for({ids.shape()[0], ids.shape()[1], d_model})
            : ops::DropoutStream{};
  autograd::ModuleScope lut_scope(embeddings->lut->type_name(), embeddings->lut->path());
  return ops::embedding_add_rows_dropout(
      ids, embeddings->lut->weight, std::sqrt(static_cast<double>(d_model)), position->pe.data(), p,
      drops, stream, embeddings->lut->options());
}

}  // namespace tapegrad::nn::transformer
