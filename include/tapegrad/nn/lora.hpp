// include/tapegrad/nn/lora.hpp
//
// LoRA (Hu et al., 2021, "Low-Rank Adaptation of Large Language Models"), as Hugging Face's PEFT
// defines it (peft/tuners/lora/layer.py): a frozen Linear W (out, in) gains two small matrices,
// A (r, in) and B (out, r), and computes
//
//     y = W x + b + (lora_alpha / r) * B A dropout(x)          dropout on the adapter's input only
//
// A starts as a Linear's weight does (Kaiming-uniform with a = sqrt(5), U(-1/sqrt(in), 1/sqrt(in)))
// and B as zeros, so a new adapter changes nothing until B is trained. Only A and B train: W, its
// bias and every other parameter of the model are frozen (requires_grad false), so they get no
// gradient, no optimizer state, and no backward work (ops::linear skips dW for a weight that does
// not require grad).
//
// Where the adapter lives. PEFT replaces each target nn.Linear by a lora.Linear wrapping it, which
// Python can do because a model's layers are attributes. A C++ model holds its layers as typed
// members (LlamaAttention's std::shared_ptr<Linear> q_proj) that no function outside it can
// re-point, so tapegrad attaches the adapter to the Linear itself: the same object gains the
// children lora_dropout, lora_A (a Linear(in, r), no bias) and lora_B (a Linear(r, out), no bias)
// and its forward adds their branch (linear.hpp). The names are PEFT's, so the state dict has
// PEFT's keys: model.layers.0.self_attn.q_proj.lora_A.weight. Every model built from Linears, a
// learner's own included, takes adapters without a change.
//
//     nn::add_lora(*llama, {"q_proj", "v_proj"}, nn::LoRAOptions(8).lora_alpha(16));
//     ... train: only the lora_A and lora_B weights require grad ...
//     nn::merge_lora(*llama);   // W += (alpha / r) B A, adapters removed: a plain model again
//
// PEFT's adapter files (adapter_config.json, adapter_model.safetensors) are read and written by
// pretrained/lora_adapter.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

class Linear;

/// One adapter's hyper-parameters, PEFT's LoraConfig names and defaults.
class LoRAOptions {
 public:
  LoRAOptions(std::int64_t r = 8) : r_(r) {}  // implicit, as DropoutOptions: LoRAOptions opts = 8

  /// The rank: rows of A, columns of B (>= 1).
  TAPEGRAD_ARG(std::int64_t, r);
  /// The numerator of the scaling alpha / r (finite, > 0); PEFT's default 8.
  TAPEGRAD_ARG(double, lora_alpha) = 8.0;
  /// Dropout probability on the adapter's input, in [0, 1]; 0: none.
  TAPEGRAD_ARG(double, lora_dropout) = 0.0;
  /// rsLoRA (Kalajdzievski, 2023): scale by alpha / sqrt(r) instead of alpha / r.
  TAPEGRAD_ARG(bool, use_rslora) = false;

 public:
  /// alpha / r, or alpha / sqrt(r) with use_rslora, as PEFT computes it (in double).
  double scaling() const;
};

/// Checks every field, in one place: ValueError naming the field and the value.
void validate(const LoRAOptions& options);

/// PEFT's rule for a name of target_modules: `path` is the target itself or ends with "." +
/// target ("model.layers.0.self_attn.q_proj" matches "q_proj" and "self_attn.q_proj", not "proj").
bool matches_target(const std::string& path, const std::string& target);

/// Adds an adapter of `options` to every Linear of `model` whose path matches one of
/// `target_modules` (matches_target), in named_modules() order, its A drawn from `generator` (the
/// default one when null), which also drives the adapters' dropout masks; then freezes every
/// parameter of the model but the adapters' (PEFT's bias "none"). Returns the paths adapted.
/// Checked before anything changes, ValueError naming what is wrong: an empty list, a target that
/// matches no module (naming the model's Linears), a target matching a module that is not a
/// Linear (naming its type), a Linear that has an adapter already, options as validate().
std::vector<std::string> add_lora(Module& model, const std::vector<std::string>& target_modules,
                                  const LoRAOptions& options,
                                  std::shared_ptr<Generator> generator = nullptr);

/// (path, layer) of every Linear of `model` that carries an adapter, in named_modules() order.
std::vector<std::pair<std::string, Linear*>> lora_layers(Module& model);
std::vector<std::pair<std::string, const Linear*>> lora_layers(const Module& model);

/// PEFT's merge_and_unload: every adapted Linear's weight += scaling * B A, and its adapter
/// removed, so the model is a plain one again (its state dict without lora_ keys). The merged
/// weights stay frozen, as the rest of the model. Returns the number of layers merged.
std::size_t merge_lora(Module& model);

}  // namespace tapegrad::nn
