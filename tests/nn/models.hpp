// tests/nn/models.hpp: two small models built from the real layers, shared by the nn tests.
//   TinyLM         the toy training's model: embed (Embeddings) -> pos (PositionalEncoding) -> out (Linear)
//   TutorialModel  the seed tutorials' nesting: src_embed = ModuleList [Embeddings, PositionalEncoding]
#pragma once

#include <memory>

#include <tapegrad/tapegrad.hpp>

namespace tapegrad::testing {

struct TinyLM : nn::Module {
  explicit TinyLM(std::shared_ptr<Generator> gen, std::int64_t vocab = 11,
                  std::int64_t d_model = 16)
      : embed(register_module("embed",
                              std::make_shared<nn::Embeddings>(
                                  nn::EmbeddingOptions(vocab, d_model).padding_idx(0), gen))),
        pos(register_module("pos",
                            std::make_shared<nn::PositionalEncoding>(
                                nn::PositionalEncodingOptions(d_model, 0.1).max_len(64), gen))),
        out(register_module(
            "out", std::make_shared<nn::Linear>(nn::LinearOptions(d_model, vocab), gen))) {}
  Tensor forward(const IndexArray& ids) {
    return out->forward(pos->forward(embed->forward(ids)));
  }  // (B, T, vocab)
  std::shared_ptr<nn::Embeddings> embed;
  std::shared_ptr<nn::PositionalEncoding> pos;
  std::shared_ptr<nn::Linear> out;
};

struct TutorialModel : nn::Module {
  TutorialModel(std::int64_t d_model, std::int64_t vocab, std::int64_t max_len = 5000)
      : src_embed(register_module("src_embed", std::make_shared<nn::ModuleList>())) {
    src_embed->push_back(std::make_shared<nn::Embeddings>(d_model, vocab));
    src_embed->push_back(std::make_shared<nn::PositionalEncoding>(d_model, 0.1, max_len));
  }
  Tensor forward(const IndexArray& ids) {
    return src_embed->ptr<nn::PositionalEncoding>(1)->forward(
        src_embed->ptr<nn::Embeddings>(0)->forward(ids));
  }
  std::shared_ptr<nn::ModuleList> src_embed;
};

}  // namespace tapegrad::testing
