// src/transformer/generator_head.cpp: the tutorial's Generator, log_softmax(proj(x)).
#include "tapegrad/transformer/generator_head.hpp"

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/softmax.hpp"

namespace tapegrad::nn::transformer {

GeneratorHead::GeneratorHead(std::int64_t d_model, std::int64_t vocab,
                             std::shared_ptr<Generator> generator)
    : proj(register_module(
          "proj", std::make_shared<Linear>(LinearOptions(d_model, vocab), std::move(generator)))) {}

Tensor GeneratorHead::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::log_softmax(proj->forward(x), -1);
}

}  // namespace tapegrad::nn::transformer
