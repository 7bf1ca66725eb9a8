// src/nn/embeddings.cpp
//
// y = lut(ids) * s,  s = float(sqrt(double(d_model)))        dweight = scatter-add of dy * s
// PyTorch multiplies a float32 tensor by a Python float, which is rounded to float32 first; the
// fused ops::embedding_scaled does the same in one pass, bit-identical to embedding then mul.
#include "tapegrad/nn/embeddings.hpp"

#include <cmath>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn {

Embeddings::Embeddings(std::int64_t d_model, std::int64_t vocab,
                       std::shared_ptr<Generator> generator)
    : Embeddings(EmbeddingOptions(vocab, d_model), std::move(generator)) {}

Embeddings::Embeddings(EmbeddingOptions lut_options, std::shared_ptr<Generator> generator)
    : lut(register_module(
          "lut", std::make_shared<Embedding>(std::move(lut_options), std::move(generator)))) {}

float Embeddings::scale() const {
  return static_cast<float>(std::sqrt(static_cast<double>(d_model())));
}

Tensor Embeddings::forward(const IndexArray& ids) {
  autograd::ModuleScope scope(type_name(), path());
  return lut->forward_scaled(ids, std::sqrt(static_cast<double>(d_model())));
}

}  // namespace tapegrad::nn
