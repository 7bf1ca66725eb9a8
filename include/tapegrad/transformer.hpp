// include/tapegrad/transformer.hpp: the umbrella header of tapegrad::transformer, models assembled
// from tapegrad::nn: the Annotated Transformer (encoder-decoder, the copy task's make_model and
// greedy_decode), the GPT, the Llama (LlamaForCausalLM), and the sampler of any CausalLM. It links
// tapegrad::nn only: a model does not know how it is trained (GPT::parameter_groups returns the
// groups; the caller builds the optimizer).
#pragma once

#include "tapegrad/transformer/attention.hpp"
#include "tapegrad/transformer/feed_forward.hpp"
#include "tapegrad/transformer/sublayer.hpp"
#include "tapegrad/transformer/encoder.hpp"
#include "tapegrad/transformer/decoder.hpp"
#include "tapegrad/transformer/generator_head.hpp"
#include "tapegrad/transformer/input_embedding.hpp"
#include "tapegrad/transformer/encoder_decoder.hpp"
#include "tapegrad/transformer/make_model.hpp"
#include "tapegrad/transformer/label_smoothing.hpp"
#include "tapegrad/transformer/greedy_decode.hpp"
#include "tapegrad/transformer/causal_lm.hpp"
#include "tapegrad/transformer/generate.hpp"
#include "tapegrad/transformer/gpt_init.hpp"
#include "tapegrad/transformer/gpt.hpp"
#include "tapegrad/transformer/gpt_parts.hpp"
#include "tapegrad/transformer/alibi.hpp"
#include "tapegrad/transformer/llama.hpp"
