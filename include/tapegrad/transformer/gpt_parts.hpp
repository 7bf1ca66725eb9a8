// include/tapegrad/transformer/gpt_parts.hpp
//
// Named parts of a GPT. A learner's attention, MLP or norm is registered under a name; a config
// then names it like a built-in choice, a checkpoint stores the name beside the sizes, and any
// program that reads the checkpoint (gpt --resume, gpt_sample, gpt_eval, or the learner's own)
// rebuilds the same model from the names alone:
//
//     namespace tt = tapegrad::nn::transformer;
//     tt::register_attention("mqa", [](const tt::GPTConfig& c, std::shared_ptr<Generator> g) {
//       return std::make_shared<MultiQueryAttention>(c, std::move(g));
//     });
//     tt::GPT model(tt::GPTConfig(vocab, 256).attention("mqa"));
//
// The built-in parts are registered under the names GPTConfig documents: the attentions "causal"
// (CausalSelfAttention, nanoGPT's) and "alibi" (AlibiAttention, alibi.hpp: the worked case of a
// part written on the public API), the MLPs "gelu", "relu_squared" and "swiglu" (MLP), the norms
// "layernorm" and "rmsnorm". A name is registered once per process: registering it again is a
// ValueError (two parts under one name would make a checkpoint mean two models). Names are
// 1 to 64 characters of [a-z0-9_-], so that they read the same in a file, a flag and a message.
#pragma once

#include <string>
#include <vector>

#include "tapegrad/transformer/gpt.hpp"

namespace tapegrad::nn::transformer {

/// Registers the attention `factory` builds under `name` (GPTConfig::attention). ValueError for a
/// name taken or malformed, or a null factory.
void register_attention(const std::string& name, AttentionFactory factory);
/// Registers a feed-forward branch under `name` (GPTConfig::mlp).
void register_mlp(const std::string& name, ModuleFactory factory);
/// Registers a norm under `name` (GPTConfig::norm).
void register_norm(const std::string& name, ModuleFactory factory);

/// The names registered, built-ins included, sorted.
std::vector<std::string> registered_attentions();
std::vector<std::string> registered_mlps();
std::vector<std::string> registered_norms();

/// The factory registered under `name`. ValueError when none is, naming the name, what is
/// registered, and how to register one (the message a program shows for a checkpoint whose
/// model names a part this program has not registered). `where` starts the message ("GPT").
AttentionFactory registered_attention(const std::string& name, const std::string& where = "GPT");
ModuleFactory registered_mlp(const std::string& name, const std::string& where = "GPT");
ModuleFactory registered_norm(const std::string& name, const std::string& where = "GPT");

}  // namespace tapegrad::nn::transformer
