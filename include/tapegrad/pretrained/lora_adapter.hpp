// include/tapegrad/pretrained/lora_adapter.hpp
//
// LoRA adapters in Hugging Face PEFT's folder layout, in and out: an adapter trained here loads in
// PEFT (PeftModel.from_pretrained), and an adapter PEFT saved (save_pretrained) loads onto a
// tapegrad base model, the adapters themselves being nn/lora.hpp's.
//
//     auto llama = pretrained::load_llama("SmolLM2-135M");
//     pretrained::load_lora_adapter(*llama.model, "SmolLM2-135M-lora");   // A and B of each target
//     ...
//     nn::add_lora(*llama.model, {"q_proj", "v_proj"}, nn::LoRAOptions(8).lora_alpha(16));
//     ... train ...
//     io::StagedFolder out("my-adapter", "--export-adapter");              // absent or empty
//     pretrained::save_lora_adapter(*llama.model, out.staging().string(), "SmolLM2-135M");
//     out.commit();                                                         // appears whole
//
// The folder (https://huggingface.co/docs/peft, peft/utils/save_and_load.py):
//     adapter_config.json        PEFT's LoraConfig: peft_type "LORA", task_type "CAUSAL_LM", r,
//                                lora_alpha, lora_dropout, target_modules, bias "none",
//                                fan_in_fan_out, use_rslora, base_model_name_or_path, ...
//     adapter_model.safetensors  per adapted Linear at module path P, without PEFT's adapter name:
//                                base_model.model.P.lora_A.weight (r, in_features)
//                                base_model.model.P.lora_B.weight (out_features, r)
// P is the module's path in the Hugging Face model, which tapegrad's models share:
// LlamaForCausalLM's are transformers' (model.layers.0.self_attn.q_proj), and a GPT's are GPT-2's
// GPT2LMHeadModel's (transformer.h.0.attn.c_attn), nanoGPT having kept GPT-2's names.
//
// GPT-2's layers are Conv1D modules whose weight is stored (in, out), the transpose of a Linear's,
// so PEFT marks its adapters fan_in_fan_out. That changes how PEFT MERGES (W += (s B A)^T, in
// the Conv1D layout), not the adapter: A is (r, in) and B (out, r) for a Conv1D as for a Linear,
// and y = W x + s B A x either way. tapegrad holds GPT-2's weights as Linears (the loader
// transposes them), so the matrices load, compute and merge (W += s B A) as they are, and
// save_gpt2 transposes the merged weight back. fan_in_fan_out is written true for a GPT, and read
// without effect (PEFT itself corrects a wrong value with a warning).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/core/random.hpp"
#include "tapegrad/nn/lora.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::pretrained {

/// adapter_config.json: what tapegrad reads and writes of PEFT's LoraConfig.
struct LoRAAdapterConfig {
  std::int64_t r = 8;         ///< the rank
  double lora_alpha = 8.0;    ///< scaling = lora_alpha / r (/ sqrt(r) with use_rslora)
  double lora_dropout = 0.0;  ///< on the adapters' input, in training
  bool use_rslora = false;
  /// The names matched as suffixes of module paths (nn::matches_target): {"q_proj", "v_proj"}.
  std::vector<std::string> target_modules;
  /// target_modules given as one string: a regular expression the whole path must match
  /// (ECMAScript syntax, which agrees with Python's re for the patterns PEFT users write), or
  /// "all-linear" (every Linear but the output layer lm_head). Then target_modules is empty.
  std::optional<std::string> target_modules_pattern;
  bool fan_in_fan_out = false;          ///< true for GPT-2's Conv1D layers (see above)
  std::string base_model_name_or_path;  ///< "" is written as null
  std::string task_type = "CAUSAL_LM";  ///< "CAUSAL_LM", or "" (null: a bare PeftModel)

  /// The options of each adapter.
  nn::LoRAOptions options() const;
  /// Whether the config targets the Linear at `path` (the list by suffix, or the pattern).
  bool targets(const std::string& path) const;
  /// The file's text as PEFT's save_pretrained writes it (sorted keys, indent 2), with the
  /// fields a PEFT reader needs: bias "none", peft_type "LORA", inference_mode true,
  /// init_lora_weights true, use_dora false, empty rank and alpha patterns, nulls for
  /// modules_to_save, layers_to_transform, layers_pattern, revision, auto_mapping.
  std::string to_json() const;
};

/// Reads and checks `path` (an adapter_config.json). CheckpointError (kind "InvalidConfig")
/// naming the file and the field for: a file that is not a JSON object; a peft_type other than
/// "LORA" (prefix tuning, IA3, AdaLoRA, LoHa ... are other methods, named); a task_type other than
/// "CAUSAL_LM" or null; r not an integer >= 1; lora_alpha not a number > 0; lora_dropout outside
/// [0, 1]; a bias other than "none" (PEFT's "all" and "lora_only" train the base model's biases,
/// which the file then holds); target_modules absent, empty, or neither a list of strings nor a
/// string (a pattern std::regex cannot compile named); what changes the adapter's arithmetic in
/// a way not implemented, named: use_dora, lora_bias, rank_pattern or alpha_pattern (per-module r
/// or alpha), layers_to_transform, layers_pattern, modules_to_save, exclude_modules,
/// layer_replication, trainable_token_indices, target_parameters, alora_invocation_tokens,
/// use_qalora, an init_lora_weights that changes the base weights (PiSSA, OLoRA, CorDA, LoftQ:
/// any string but "gaussian" and "eva"), and any other field set to true.
LoRAAdapterConfig read_lora_adapter_config(const std::string& path);

/// The config of the adapters `model` carries, as save_lora_adapter writes it: their options
/// (ValueError when the layers disagree: PEFT's file holds one r, alpha and dropout); as
/// target_modules, for each adapted layer the shortest end of its path that names adapted layers
/// only (usually the names given to nn::add_lora, sorted); fan_in_fan_out for a GPT (GPT-2's
/// Conv1D). ValueError for a model without adapters.
LoRAAdapterConfig lora_adapter_config_of(const nn::Module& model,
                                         const std::string& base_model_name_or_path = "");

/// Writes the adapters of `model` to `folder` (created if missing) in PEFT's layout:
/// adapter_config.json (lora_adapter_config_of) and adapter_model.safetensors (every lora_A and
/// lora_B under base_model.model.<path>, float32, metadata {"format": "pt"}). Each file replaces
/// any earlier one atomically, the weights last. For a folder that appears whole, write into an
/// io::StagedFolder's staging() and commit it (above). ValueError as lora_adapter_config_of.
void save_lora_adapter(const nn::Module& model, const std::string& folder,
                       const std::string& base_model_name_or_path = "");

/// Attaches the adapters in `folder` to `model` (a base model: a LlamaForCausalLM, a GPT, any
/// module whose paths are the adapter's) and freezes every other parameter, as PEFT's
/// PeftModel.from_pretrained(base, folder, is_trainable=True) does; `generator` drives the
/// adapters' dropout (the default one when null). Returns the config read. Everything is checked,
/// and the matrices read, before the model changes; CheckpointError naming the file and what is
/// wrong: no folder, no adapter_config.json, no adapter_model.safetensors (an adapter_model.bin
/// alone is refused with how to convert it: tapegrad never unpickles), the config as
/// read_lora_adapter_config refuses it, a damaged safetensors file, a key that is not
/// base_model.model.<module path>.lora_A.weight or .lora_B.weight (one holding an adapter name,
/// ".default", is named so), a key naming a module the model does not have or one that is not a
/// Linear, a module the config's target_modules does not name, a Linear the config targets that
/// has no matrices or has one of the two, a shape that does not fit the Linear (lora_A (r,
/// in_features), lora_B (out_features, r)), an r of the matrices other than the config's, an
/// integer dtype, a value not finite, a module that has an adapter already.
/// F32, F16, BF16 and F64 matrices are widened to float32.
LoRAAdapterConfig load_lora_adapter(nn::Module& model, const std::string& folder,
                                    std::shared_ptr<Generator> generator = nullptr);

}  // namespace tapegrad::pretrained
