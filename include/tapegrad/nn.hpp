// include/tapegrad/nn.hpp: the umbrella header of tapegrad::nn: Module (parameters, buffers and
// children by name, train/eval, state_dict), UnaryModule (a module of one input) and the layers
// built on the ops: Embedding, the tutorials' scaled Embeddings and PositionalEncoding, Dropout,
// Linear (and its LoRA adapters), LayerNorm and RMSNorm, GELU and SiLU, SwiGLU, RotaryEmbedding,
// the losses.
// It links tapegrad::core only.
#pragma once

#include "tapegrad/nn/state_dict.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/unary_module.hpp"
#include "tapegrad/nn/module_list.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/embeddings.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/lora.hpp"
#include "tapegrad/nn/tied_linear.hpp"
#include "tapegrad/nn/activation.hpp"
#include "tapegrad/nn/loss.hpp"
#include "tapegrad/nn/init.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/nn/layer_norm.hpp"
#include "tapegrad/nn/rms_norm.hpp"
#include "tapegrad/nn/rotary_embedding.hpp"
#include "tapegrad/nn/swiglu.hpp"
#include "tapegrad/nn/parameter_groups.hpp"
