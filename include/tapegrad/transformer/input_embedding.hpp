// include/tapegrad/transformer/input_embedding.hpp
//
// The bottom of the encoder and of the decoder in The Annotated Transformer,
// nn.Sequential(Embeddings(d_model, vocab), PositionalEncoding(d_model, dropout)):
//
//     y = position(embeddings(ids))               ids (B, T) -> (B, T, d_model)
//
// The two children are registered as "0" and "1" and the module prints as "Sequential", so the
// state keys are the tutorial's ("src_embed.0.lut.weight", "src_embed.1.pe"). A general
// Sequential cannot take ids in and give a tensor out with tapegrad's typed forwards; this one
// does exactly that.
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/nn/embeddings.hpp"
#include "tapegrad/nn/positional_encoding.hpp"

namespace tapegrad::nn::transformer {

class InputEmbedding : public Module {
 public:
  InputEmbedding(std::shared_ptr<Embeddings> embeddings,
                 std::shared_ptr<PositionalEncoding> position);

  Tensor forward(const IndexArray& ids);

  std::shared_ptr<Embeddings> embeddings;        ///< "0"
  std::shared_ptr<PositionalEncoding> position;  ///< "1"

  std::string type_name() const override { return "Sequential"; }
};

}  // namespace tapegrad::nn::transformer
