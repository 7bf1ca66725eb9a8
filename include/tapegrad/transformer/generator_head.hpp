// include/tapegrad/transformer/generator_head.hpp
//
// The output head of The Annotated Transformer, which the tutorial calls `Generator`: a linear
// projection to the vocabulary followed by log_softmax,
//
//     y = log_softmax(proj(x), dim = -1)          x (*, d_model) -> (*, vocab) log-probabilities
//
// The C++ class is GeneratorHead because tapegrad::Generator is the random-number generator; it
// prints as "Generator" and is registered as "generator", so the keys are the tutorial's
// ("generator.proj.weight").
#pragma once

#include <cstdint>
#include <memory>

#include "tapegrad/nn/linear.hpp"

namespace tapegrad::nn::transformer {

class GeneratorHead : public Module {
 public:
  GeneratorHead(std::int64_t d_model, std::int64_t vocab,
                std::shared_ptr<Generator> generator = nullptr);

  Tensor forward(const Tensor& x);

  std::shared_ptr<Linear> proj;  ///< "proj": Linear(d_model, vocab)

  std::string type_name() const override { return "Generator"; }
};

}  // namespace tapegrad::nn::transformer
