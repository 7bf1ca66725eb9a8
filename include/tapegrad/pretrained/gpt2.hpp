// include/tapegrad/pretrained/gpt2.hpp
//
// GPT-2 in Hugging Face's folder layout, in and out: OpenAI's GPT-2 (or a fine-tuned one) becomes
// a tapegrad GPT, and a GPT trained here becomes a folder transformers' GPT2LMHeadModel loads.
//
//     auto gpt2 = pretrained::load_gpt2("gpt2");              // config.json, model.safetensors,
//     gpt2.model->eval();                                     // vocab.json, merges.txt
//     auto ids = gpt2.tokenizer->encode("Hello, I'm a language model,");
//     ...
//     pretrained::save_gpt2(*gpt2.model, "gpt2-finetuned", &*gpt2.tokenizer);
//
// The folder (https://huggingface.co/docs/transformers/model_doc/gpt2):
//     config.json         the sizes (gpt2_config.hpp)
//     model.safetensors   the weights (https://huggingface.co/docs/safetensors):
//                           wte.weight (V, C), wpe.weight (P, C), ln_f.{weight, bias} (C), and per
//                           block i: h.i.ln_1.{weight, bias}, h.i.attn.c_attn.{weight (C, 3C),
//                           bias}, h.i.attn.c_proj.{weight (C, C), bias}, h.i.ln_2.*,
//                           h.i.mlp.c_fc.{weight (C, 4C), bias}, h.i.mlp.c_proj.{weight (4C, C),
//                           bias}
//     vocab.json, merges.txt   GPT-2's tokenizer (data/gpt2_tokenizer.hpp)
// Three things differ from a tapegrad GPT's state dict, and the loader translates them:
//   * GPT-2's linear layers are Conv1D modules, which compute x W + b with W of shape (in, out):
//     the transpose of a Linear's weight (out, in). The four matrices per block are transposed.
//   * Some files prefix every key with "transformer." and add lm_head.weight, which must equal
//     wte.weight: the head is tied to the token table (checked value by value, not trusted).
//   * Older files hold each attention's causal mask, h.i.attn.bias (1, 1, P, P), and
//     h.i.attn.masked_bias: buffers, not parameters, which the loader skips.
// Everything is checked before any weight is read: config.json field by field, the safetensors
// header as io::SafetensorsReader checks it, then every key (none missing, none extra) and every
// shape against config.json, and the tokenizer's size against vocab_size. The weights are then
// read from the file straight into the model's parameters: the load needs the model's memory and
// a few megabytes more, not twice the file.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/data/gpt2_tokenizer.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/pretrained/gpt2_config.hpp"
#include "tapegrad/transformer/gpt.hpp"

namespace tapegrad::pretrained {

/// A GPT-2 loaded from a folder.
struct PretrainedGPT2 {
  GPT2Config config;
  std::shared_ptr<nn::transformer::GPT> model;   ///< in training mode, as any new module
  std::optional<data::GPT2Tokenizer> tokenizer;  ///< when the folder has vocab.json and merges.txt
};

/// Loads the GPT-2 in `folder`, its dropout `dropout` (0 to evaluate; GPT-2 trained with 0.1).
/// Refused with one line naming the file and the key or field, before any weight is read
/// (CheckpointError; its kind says which check): a folder without model.safetensors (a
/// pytorch_model.bin alone is refused with how to convert it: a pickle can run code when
/// unpickled, and tapegrad never unpickles), config.json as read_gpt2_config refuses it, a damaged
/// or truncated model.safetensors, a missing or unexpected key, a shape that disagrees with
/// config.json, an integer dtype, a tokenizer whose size is not vocab_size, one tokenizer file
/// without the other. Read afterwards: a weight that is not finite, and lm_head.weight differing
/// from wte.weight.
PretrainedGPT2 load_gpt2(const std::string& folder, double dropout = 0.0);

/// A model.safetensors of GPT-2, opened and checked against a config (every check load_gpt2 makes
/// of it), ready to be read into a GPT of config.gpt_config(). For a program that builds the model
/// itself (a trainer, whose optimizer holds the parameters) and then fills it.
class GPT2Weights {
 public:
  GPT2Weights(const std::string& path, const GPT2Config& config);
  /// Writes every parameter of `model`, whose sizes must be the config's (ValueError otherwise).
  /// On an error while reading (a weight not finite, an untied head, a checksum), `model` is left
  /// partly written: discard it.
  void read_into(nn::transformer::GPT& model) const;
  /// "transformer." when the file's keys carry that prefix, else "".
  const std::string& prefix() const { return prefix_; }

 private:
  io::SafetensorsReader file_;
  GPT2Config config_;
  std::string prefix_;
  bool has_lm_head_ = false;
};

/// Writes `model` to `folder` (created if missing) in Hugging Face's layout, as transformers'
/// save_pretrained writes a GPT2LMHeadModel: model.safetensors with every key prefixed
/// "transformer.", the Conv1D matrices transposed back, no lm_head.weight (tied to
/// transformer.wte.weight) and no mask buffers, metadata {"format": "pt"}; config.json (`config`
/// when given, else gpt2_config_of(model.config())); vocab.json and merges.txt when `tokenizer` is
/// given. Each file replaces any earlier one atomically. ValueError for a model whose choices
/// GPT-2's layout cannot hold, or a config whose sizes are not the model's.
void save_gpt2(const nn::transformer::GPT& model, const std::string& folder,
               const data::GPT2Tokenizer* tokenizer = nullptr, const GPT2Config* config = nullptr);

/// The path of `folder`'s model.safetensors, after checking the folder: CheckpointError naming
/// what is there instead (no folder; a pytorch_model.bin, tf_model.h5 or flax_model.msgpack only;
/// a sharded model.safetensors.index.json).
std::string gpt2_weights_path(const std::string& folder);

}  // namespace tapegrad::pretrained
