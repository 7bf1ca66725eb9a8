// include/tapegrad/pretrained.hpp: the pretrained layer, models in other frameworks' files:
// GPT-2 and the Llama family in Hugging Face's layout, in and out.
#pragma once

#include "tapegrad/pretrained/gpt2.hpp"
#include "tapegrad/pretrained/gpt2_config.hpp"
#include "tapegrad/pretrained/llama.hpp"
