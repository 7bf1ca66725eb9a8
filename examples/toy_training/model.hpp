// examples/toy_training/model.hpp: the toy model, exactly the seed tutorials' pipeline,
//
//     ids (B, T) -> embed: Embeddings, lut(ids) * sqrt(d_model), padding_idx 0  -> (B, T, d_model)
//                -> pos:   PositionalEncoding, x + pe[:, :T], then Dropout(0.1) -> (B, T, d_model)
//                -> out:   Linear(d_model, tags)                                -> (B, T, tags)
//                -> reshaped to logits (B*T, tags) for the cross-entropy
//
// Its state, as PyTorch would name it: embed.lut.weight, pos.pe (a buffer), out.weight, out.bias.
// Used by toy_training.cpp and tape_of_a_training_step.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include <tapegrad/tapegrad.hpp>

namespace toy {

namespace nn = tapegrad::nn;
using tapegrad::Tensor;

struct ModelOptions {
  std::int64_t vocab = 25;
  std::int64_t d_model = 16;
  std::int64_t tags = 12;
  double dropout = 0.1;
  std::int64_t max_len = 64;
  bool sparse = false;  // a row-sparse gradient for the embedding (trained by SparseAdam)
};

class ToyModel : public nn::Module {
 public:
  /// Every random draw (initial weights, dropout masks) comes from `generator`.
  ToyModel(const ModelOptions& o, std::shared_ptr<tapegrad::Generator> generator)
      : embed(register_module(
            "embed", std::make_shared<nn::Embeddings>(
                         nn::EmbeddingOptions(o.vocab, o.d_model).padding_idx(0).sparse(o.sparse),
                         generator))),
        pos(register_module(
            "pos", std::make_shared<nn::PositionalEncoding>(
                       nn::PositionalEncodingOptions(o.d_model, o.dropout).max_len(o.max_len),
                       generator))),
        out(register_module(
            "out", std::make_shared<nn::Linear>(nn::LinearOptions(o.d_model, o.tags), generator))) {
  }

  /// ids (B, T) -> logits (B*T, tags), one row per position, as the cross-entropy wants them.
  Tensor forward(const tapegrad::IndexArray& ids) {
    Tensor x = embed->forward(ids);   // (B, T, d_model): the word's meaning, learned
    x = pos->forward(x);              // + where it stands, fixed; then dropout
    Tensor logits = out->forward(x);  // (B, T, tags)
    return tapegrad::ops::reshape(logits, {-1, out->options().out_features()});
  }

  std::shared_ptr<nn::Embeddings> embed;
  std::shared_ptr<nn::PositionalEncoding> pos;
  std::shared_ptr<nn::Linear> out;
};

}  // namespace toy
