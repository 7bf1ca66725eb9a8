// include/tapegrad/pretrained/gpt2_config.hpp
//
// A Hugging Face GPT-2's config.json: the fields tapegrad reads, each checked, and the file
// written back. transformers' GPT2Config documents the fields
// (https://huggingface.co/docs/transformers/model_doc/gpt2#transformers.GPT2Config); OpenAI's
// GPT-2 small has
//
//     {"activation_function": "gelu_new", "n_embd": 768, "n_head": 12, "n_layer": 12,
//      "n_positions": 1024, "vocab_size": 50257, "layer_norm_epsilon": 1e-05, ...}
//
// The five sizes are required; the others, when absent, take transformers' defaults. Fields that
// would change the model in a way tapegrad's GPT does not (an untied head, an MLP width other than
// 4 n_embd, attention scaled by the layer index, cross-attention) are refused, not ignored; the
// rest (token ids, task settings, "architectures") are read by nobody here and left alone.
#pragma once

#include <cstdint>
#include <string>

#include "tapegrad/transformer/gpt.hpp"

namespace tapegrad::pretrained {

/// What tapegrad uses of a GPT-2 config.json, with transformers' names and defaults.
struct GPT2Config {
  std::int64_t vocab_size = 50257;  ///< rows of wte, columns of the logits
  std::int64_t n_positions = 1024;  ///< rows of wpe: the longest context
  std::int64_t n_embd = 768;        ///< the residual stream's width C
  std::int64_t n_layer = 12;        ///< blocks
  std::int64_t n_head = 12;         ///< attention heads, dividing n_embd
  double layer_norm_epsilon = 1e-5;
  /// "gelu_new" (GPT-2's tanh GELU; also spelt "gelu_pytorch_tanh") or "gelu" (the erf GELU).
  std::string activation_function = "gelu_new";
  /// Dropout after the embeddings, on the attention weights and after each residual branch, as
  /// GPT-2 was trained (0.1 each). Loading ignores them (a caller chooses its dropout, 0 to
  /// evaluate); they are kept to be written back.
  double embd_pdrop = 0.1, attn_pdrop = 0.1, resid_pdrop = 0.1;

  /// The largest sizes accepted: beyond GPT-2 XL's (1,600 wide, 48 layers, 1,024 positions) with
  /// room to spare, but refusing what could only exhaust memory.
  static constexpr std::int64_t kMaxVocab = std::int64_t(1) << 24, kMaxPositions = 1 << 20,
                                kMaxWidth = 1 << 16, kMaxLayers = 4096;

  /// The GPT of these sizes with GPT-2's choices: learned positions, LayerNorm with
  /// layer_norm_epsilon, the GELU MLP (tanh or erf), a tied head; `dropout` everywhere.
  nn::transformer::GPTConfig gpt_config(double dropout = 0.0) const;
  /// config.json's text as transformers writes it for a GPT2LMHeadModel (sorted keys, indent 2).
  std::string to_json() const;
};

/// Reads and checks `path` (a config.json). CheckpointError (kind "InvalidConfig") naming the file
/// and the field for: a file that is not a JSON object, a size missing, not an integer (768.0,
/// "768", true) or out of range, n_head not dividing n_embd, layer_norm_epsilon not in (0, 1), an
/// activation_function other than "gelu_new", "gelu_pytorch_tanh" or "gelu", a dropout outside
/// [0, 1], tie_word_embeddings false, n_inner other than null or 4 n_embd,
/// scale_attn_by_inverse_layer_idx true, scale_attn_weights false, add_cross_attention true, or a
/// model_type other than "gpt2".
GPT2Config read_gpt2_config(const std::string& path);

/// The GPT-2 config of a GPT built with GPT-2's choices; ValueError naming the choice that GPT-2's
/// layout cannot hold (positions "rope", norm "rmsnorm", mlp "swiglu", ...).
GPT2Config gpt2_config_of(const nn::transformer::GPTConfig& config);

}  // namespace tapegrad::pretrained
