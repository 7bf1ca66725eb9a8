// include/tapegrad/transformer.hpp: the umbrella header of tapegrad::transformer, models assembled
// from tapegrad::nn: the Annotated Transformer (encoder-decoder, the copy task's make_model and
// greedy_decode), the GPT, and the sampler of any CausalLM. It links tapegrad::nn only: a model does not know how
// it is trained (GPT::parameter_groups returns the groups; the caller builds the optimizer).
#pragma once

#include "tapegrad/nn/transformer/attention.hpp"
#include "tapegrad/nn/transformer/feed_forward.hpp"
#include "tapegrad/nn/transformer/sublayer.hpp"
#include "tapegrad/nn/transformer/encoder.hpp"
#include "tapegrad/nn/transformer/decoder.hpp"
#include "tapegrad/nn/transformer/generator_head.hpp"
#include "tapegrad/nn/transformer/input_embedding.hpp"
#include "tapegrad/nn/transformer/encoder_decoder.hpp"
#include "tapegrad/nn/transformer/make_model.hpp"
#include "tapegrad/nn/transformer/label_smoothing.hpp"
#include "tapegrad/nn/transformer/greedy_decode.hpp"
#include "tapegrad/nn/transformer/causal_lm.hpp"
#include "tapegrad/nn/transformer/generate.hpp"
#include "tapegrad/nn/transformer/gpt_init.hpp"
#include "tapegrad/nn/transformer/gpt.hpp"
