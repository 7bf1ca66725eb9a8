// include/tapegrad/nn/unary_module.hpp
//
// UnaryModule: a Module whose forward takes one tensor and returns one. In PyTorch every module
// has a forward that a container can call without knowing the layer; in C++ a container needs a
// type to call it through, and this is that type for the layers of one input. The norms
// (LayerNorm, RMSNorm), SwiGLU and the GPT's MLP are UnaryModules, so that a GPT's Block can be
// built from any of them, or from a learner's own (transformer/gpt.hpp, GPTConfig::make_norm and
// make_mlp):
//
//     class MyNorm : public nn::UnaryModule {
//      public:
//       Tensor forward(const Tensor& x) override { ... }
//     };
#pragma once

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

class UnaryModule : public Module {
 public:
  /// x -> y, for whatever shapes the module documents.
  virtual Tensor forward(const Tensor& x) = 0;
};

}  // namespace tapegrad::nn
