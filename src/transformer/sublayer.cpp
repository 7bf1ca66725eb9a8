// src/transformer/sublayer.cpp: SublayerConnection, x + dropout(sublayer(norm(x))).
#include "tapegrad/transformer/sublayer.hpp"

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/elementwise.hpp"

namespace tapegrad::nn::transformer {

LayerNormOptions layer_norm_options(std::int64_t size, LayerNormVariant variant) {
  return variant == LayerNormVariant::annotated ? LayerNormOptions::annotated(size)
                                                : LayerNormOptions({size});
}

SublayerConnection::SublayerConnection(std::int64_t size, double dropout_p,
                                       LayerNormVariant variant,
                                       std::shared_ptr<Generator> generator)
    : norm(register_module("norm", std::make_shared<LayerNorm>(layer_norm_options(size, variant)))),
      dropout(
          register_module("dropout", std::make_shared<Dropout>(dropout_p, std::move(generator)))) {}

Tensor SublayerConnection::forward(const Tensor& x,
                                   const std::function<Tensor(const Tensor&)>& sublayer) {
  autograd::ModuleScope scope(type_name(), path());
  return x + dropout->forward(sublayer(norm->forward(x)));
}

}  // namespace tapegrad::nn::transformer
