// include/tapegrad/pretrained/llama.hpp
//
// Llama-family checkpoints in Hugging Face's folder layout, in and out: a SmolLM2, TinyLlama or
// Llama 3.2 folder becomes a tapegrad LlamaForCausalLM (transformer/llama.hpp), and a model
// fine-tuned here becomes a folder transformers' LlamaForCausalLM loads.
//
//     auto llama = pretrained::load_llama("SmolLM2-135M");     // config.json, model.safetensors
//     llama.model->eval();
//     ...
//     pretrained::save_llama(*llama.model, "SmolLM2-135M-tuned", &llama.config);
//
// The folder (https://huggingface.co/docs/transformers/model_doc/llama):
//     config.json         model_type "llama" and the sizes (read_llama_config, below)
//     model.safetensors   the weights under transformers' keys: model.embed_tokens.weight (V, C);
//                         per layer i, model.layers.i.self_attn.{q,k,v,o}_proj.weight,
//                         model.layers.i.mlp.{gate,up,down}_proj.weight,
//                         model.layers.i.{input,post_attention}_layernorm.weight (C);
//                         model.norm.weight (C); lm_head.weight (V, C) unless tied
//     or, sharded, model.safetensors.index.json, whose "weight_map" names the file of each key,
//                         and those files (model-00001-of-00002.safetensors, ...), in the folder
// Every tensor is a Linear's (out, in) or a vector, as the model holds it: nothing is transposed.
// F32, BF16, F16 and F64 weights are widened to float32 as they are read. Older files keep each
// layer's rotary frequencies, model.layers.i.self_attn.rotary_emb.inv_freq (d / 2): a buffer that
// the model computes itself, skipped (its shape checked).
// Everything is checked before any weight is read: config.json field by field, each file's header
// as io::SafetensorsReader checks it, the index (every key once, every file a plain name in the
// folder), then every key (none missing, none unexpected) and every shape against config.json,
// and the model's size against the machine's memory. The weights are then read from the files
// straight into the model's parameters: a load needs the model's memory, not twice the files'.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/transformer/llama.hpp"

namespace tapegrad::pretrained {

/// A Llama folder's config.json: the model's sizes and choices, and the special token ids.
struct LlamaFolderConfig {
  nn::transformer::LlamaConfig model;
  std::optional<std::int64_t> bos_token_id;  ///< null or absent: none
  std::vector<std::int64_t> eos_token_ids;   ///< one id, several (Llama 3's), or none
  bool eos_token_list = false;               ///< whether config.json wrote eos_token_id as a list

  /// The largest sizes accepted: beyond Llama 3 405B's (16,384 wide, 126 layers, 128 heads,
  /// 53,248 intermediate, 131,072 positions, 128,256 tokens) with room to spare, but refusing what
  /// could only exhaust memory.
  static constexpr std::int64_t kMaxVocab = std::int64_t(1) << 24, kMaxWidth = 1 << 16,
                                kMaxIntermediate = 1 << 18, kMaxLayers = 4096, kMaxHeads = 4096,
                                kMaxHeadDim = 4096, kMaxPositions = 1 << 21;

  /// config.json's text as transformers' save_pretrained writes it for a LlamaForCausalLM (sorted
  /// keys, indent 2, "torch_dtype" "float32": the weights tapegrad writes).
  std::string to_json() const;
};

/// Reads and checks `path` (a config.json). CheckpointError (kind "InvalidConfig") naming the file
/// and the field for: a file that is not a JSON object; a model_type other than "llama"; a size
/// (vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads) missing,
/// not an integer or out of range; num_key_value_heads not dividing num_attention_heads; without
/// head_dim, num_attention_heads not dividing hidden_size or an odd head size; a head_dim that is
/// odd or out of range; rms_norm_eps not in (0, 1); rope_theta not > 0; a rope_scaling other than
/// null, {"rope_type": "default"}, "linear" (factor) or "llama3" (factor, low_freq_factor,
/// high_freq_factor, original_max_position_embeddings), naming the type and those implemented; a
/// hidden_act other than "silu"; attention_dropout outside [0, 1]; a bos or eos id not an integer.
/// Absent fields take transformers' LlamaConfig defaults (num_key_value_heads = num_attention_heads,
/// rms_norm_eps 1e-6, rope_theta 10000, max_position_embeddings 2048, tie_word_embeddings false).
LlamaFolderConfig read_llama_config(const std::string& path);

/// The config.json of a model built here: its config, no bos or eos token ids.
LlamaFolderConfig llama_folder_config(const nn::transformer::LlamaConfig& model);

/// A Llama's weights in a folder (model.safetensors, or the shards of
/// model.safetensors.index.json), opened and checked against a config (every check load_llama
/// makes of them), ready to be read into a LlamaForCausalLM of that config. For a program that
/// builds the model itself (a trainer, whose optimizer holds the parameters) and then fills it.
class LlamaWeights {
 public:
  LlamaWeights(const std::string& folder, const nn::transformer::LlamaConfig& config);
  LlamaWeights(LlamaWeights&&) noexcept;
  ~LlamaWeights();
  /// Writes every parameter of `model`, whose config must have these sizes (ValueError
  /// otherwise). On an error while reading (a weight not finite, a tied lm_head.weight that is not
  /// the token table, a checksum), `model` is left partly written: discard it.
  void read_into(nn::transformer::LlamaForCausalLM& model) const;
  /// The files read, in the order they are read (one, or the shards').
  std::vector<std::string> files() const;

 private:
  struct Shards;
  std::unique_ptr<Shards> shards_;
  nn::transformer::LlamaConfig config_;
};

/// A Llama loaded from a folder.
struct PretrainedLlama {
  LlamaFolderConfig config;
  std::shared_ptr<nn::transformer::LlamaForCausalLM> model;  ///< in training mode, as any module
};

/// Loads the Llama in `folder`. Refused with one line naming the file and the key or field, before
/// any weight is read (CheckpointError; its kind says which check): no folder; no
/// model.safetensors nor model.safetensors.index.json (a pytorch_model.bin alone is refused with
/// how to convert it: tapegrad never unpickles); config.json as read_llama_config refuses it; a
/// damaged or truncated file; an index that is not a JSON object with a "weight_map" of key ->
/// file, names a file outside the folder, a key that its file lacks, or omits a key a shard
/// holds; a missing or unexpected key; a shape that disagrees with config.json; an integer dtype;
/// a model larger than the machine's memory. Read afterwards: a weight that is not finite.
PretrainedLlama load_llama(const std::string& folder);

/// Writes `model` to `folder` (created if missing) in Hugging Face's layout, as transformers'
/// save_pretrained writes a LlamaForCausalLM: config.json (`config` when given, else
/// llama_folder_config(model.config())) and model.safetensors with the model's keys, float32,
/// metadata {"format": "pt"}, no lm_head.weight when tied, no rotary tables. Each file replaces any
/// earlier one atomically, the weights last. ValueError for a config whose sizes are not the
/// model's.
void save_llama(const nn::transformer::LlamaForCausalLM& model, const std::string& folder,
                const LlamaFolderConfig* config = nullptr);

/// config.json's model_type in `folder` ("gpt2", "llama", ...), so that a program can tell which
/// loader a folder needs; CheckpointError for a folder without a readable config.json or a
/// model_type that is not a string, and "" when the field is absent.
std::string read_model_type(const std::string& folder);

}  // namespace tapegrad::pretrained
