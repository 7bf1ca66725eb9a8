// include/tapegrad/pretrained.hpp: the pretrained layer, models in other frameworks' files:
// GPT-2 and the Llama family in Hugging Face's layout, and LoRA adapters in PEFT's, in and out.
#pragma once

#include "tapegrad/pretrained/gpt2.hpp"
#include "tapegrad/pretrained/gpt2_config.hpp"
#include "tapegrad/pretrained/llama.hpp"
#include "tapegrad/pretrained/lora_adapter.hpp"
