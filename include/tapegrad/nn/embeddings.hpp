// include/tapegrad/nn/embeddings.hpp
//
// Embeddings: the scaled embedding of the seed tutorials and The Annotated Transformer,
//
//     y = lut(ids) * sqrt(d_model)        ids (B, T) -> y (B, T, d_model)
//
// with `lut` an Embedding(vocab, d_model). The scale, float(sqrt(double(d_model))) (22.627417f for
// 512), brings the N(0, 1) rows to the size of the positional encoding added next. Its state key
// is "lut.weight", so a tutorial-shaped model has "src_embed.0.lut.weight". The multiplication is
// part of the graph: the weight's gradient is scaled by the same factor.
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

class Embeddings : public Module {
 public:
  /// The tutorials' argument order: Embeddings(d_model, vocab).
  Embeddings(std::int64_t d_model, std::int64_t vocab,
             std::shared_ptr<Generator> generator = nullptr);
  /// Every Embedding option (padding_idx, sparse, ...); d_model = embedding_dim, vocab = num_embeddings.
  explicit Embeddings(EmbeddingOptions lut_options, std::shared_ptr<Generator> generator = nullptr);

  /// ids: any shape S (usually (B, T)) -> S + (d_model,).
  Tensor forward(const IndexArray& ids);
  std::int64_t d_model() const { return lut->embedding_dim(); }
  /// float(sqrt(double(d_model))): the factor forward applies.
  float scale() const;

  std::shared_ptr<Embedding> lut;  ///< registered as "lut"

  std::string type_name() const override { return "Embeddings"; }
};

}  // namespace tapegrad::nn
