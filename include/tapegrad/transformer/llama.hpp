// include/tapegrad/transformer/llama.hpp
//
// The Llama family (Meta's Llama 2 and 3, SmolLM2, TinyLlama, ...) as transformers' LlamaForCausalLM
// defines it (models/llama/modeling_llama.py), module for module and name for name, so that the
// state dict of a Hugging Face checkpoint loads key for key (pretrained/llama.hpp reads the
// folders):
//
//     model.embed_tokens          Embedding(V, C)
//     model.layers.i              LlamaDecoderLayer, pre-norm:
//         input_layernorm           RMSNorm(C), eps rms_norm_eps
//         self_attn                 q_proj Linear(C, H d), k_proj and v_proj Linear(C, K d),
//                                   rotary (halves: transformers' rotate_half) on q and k,
//                                   causal attention in which query head h reads key/value head
//                                   h / (H / K) in place (grouped-query), o_proj Linear(H d, C)
//         post_attention_layernorm  RMSNorm(C)
//         mlp                       down_proj(silu(gate_proj(x)) * up_proj(x)); gate_proj and
//                                   up_proj Linear(C, F), down_proj Linear(F, C)
//     model.norm                  RMSNorm(C)
//     model.rotary_emb            the cos and sin tables (non-persistent: not in the state dict)
//     lm_head                     Linear(C, V) without bias, or the token table (tied)
//
// with C hidden_size, F intermediate_size, H num_attention_heads, K num_key_value_heads, d the head
// size (head_dim, or C / H). Every Linear is bias-free unless attention_bias / mlp_bias.
//   h   = x + o_proj(attn(input_layernorm(x)))
//   out = h + mlp(post_attention_layernorm(h))
//
// Why a class of its own rather than a choice of the GPT (GPTConfig's "rope", "rmsnorm",
// "swiglu"): its parameter names are Hugging Face's, not nanoGPT's, and its pieces differ in
// ways the GPT's names would hide (three projections instead of c_attn, grouped-query attention,
// an untied head, no dropout after the embedding): a reader holding modeling_llama.py finds each
// of its lines here under the same name. The GPT stays nanoGPT's.
//
// Precision: tapegrad computes in float32 throughout, so the RMSNorm is float32 as transformers'
// (which casts to float32 for the norm); under autocast::bf16 only the matrix products round their
// operands, and the norms, the rotation, the attention's softmax and the SiLU stay float32.
//
// LlamaForCausalLM is a CausalLM (causal_lm.hpp): generate() samples from it with a cache of keys
// and values, one position per new token.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/module_list.hpp"
#include "tapegrad/nn/parameter_groups.hpp"
#include "tapegrad/nn/rms_norm.hpp"
#include "tapegrad/nn/rotary_embedding.hpp"
#include "tapegrad/nn/tied_linear.hpp"
#include "tapegrad/nn/unary_module.hpp"
#include "tapegrad/transformer/causal_lm.hpp"
#include "tapegrad/transformer/generate.hpp"

namespace tapegrad::nn::transformer {

/// config.json's rope_scaling, for the types implemented: "linear" (every frequency divided by
/// factor) and "llama3" (Llama 3.1's: low frequencies divided by factor, high ones kept, the band
/// between blended). transformers' rope_init_functions define both.
struct LlamaRopeScaling {
  std::string rope_type = "llama3";  ///< "linear" or "llama3"
  double factor = 8.0;               ///< > 0 (linear: >= 1 in practice)
  double low_freq_factor = 1.0;      ///< llama3 only
  double high_freq_factor = 4.0;     ///< llama3 only, > low_freq_factor
  std::int64_t original_max_position_embeddings = 8192;  ///< llama3 only, >= 1
};

/// A Llama's sizes and choices, with transformers' LlamaConfig names and defaults (its defaults
/// are Llama 2 7B's: set the sizes).
class LlamaConfig {
 public:
  /// Number of token ids (>= 1): rows of embed_tokens, columns of the logits.
  TAPEGRAD_ARG(std::int64_t, vocab_size) = 32000;
  /// Width C of the residual stream (>= 1).
  TAPEGRAD_ARG(std::int64_t, hidden_size) = 4096;
  /// Width F of the MLP's gated layer (>= 1).
  TAPEGRAD_ARG(std::int64_t, intermediate_size) = 11008;
  /// Number of decoder layers (>= 1).
  TAPEGRAD_ARG(std::int64_t, num_hidden_layers) = 32;
  /// Query heads H (>= 1).
  TAPEGRAD_ARG(std::int64_t, num_attention_heads) = 32;
  /// Key/value heads K, dividing H (grouped-query attention); unset: H (multi-head attention).
  TAPEGRAD_ARG(std::optional<std::int64_t>, num_key_value_heads) = std::nullopt;
  /// Columns d of one head (even, >= 2); unset: hidden_size / num_attention_heads.
  TAPEGRAD_ARG(std::optional<std::int64_t>, head_dim) = std::nullopt;
  /// The longest context (>= 1): rows of the rotary tables.
  TAPEGRAD_ARG(std::int64_t, max_position_embeddings) = 2048;
  /// The RMSNorms' epsilon, in (0, 1).
  TAPEGRAD_ARG(double, rms_norm_eps) = 1e-6;
  /// The rotary base: theta_p = rope_theta^(-2p / d) (> 0).
  TAPEGRAD_ARG(double, rope_theta) = 10000.0;
  /// Unset: the plain frequencies.
  TAPEGRAD_ARG(std::optional<LlamaRopeScaling>, rope_scaling) = std::nullopt;
  /// Whether lm_head is the token table (SmolLM2, Llama 3.2 1B) or a matrix of its own (Llama 2).
  TAPEGRAD_ARG(bool, tie_word_embeddings) = false;
  /// Biases on q_proj, k_proj, v_proj and o_proj.
  TAPEGRAD_ARG(bool, attention_bias) = false;
  /// Biases on gate_proj, up_proj and down_proj.
  TAPEGRAD_ARG(bool, mlp_bias) = false;
  /// Dropout on the attention weights in training, in [0, 1] (transformers': only there).
  TAPEGRAD_ARG(double, attention_dropout) = 0.0;
  /// The MLP's activation: "silu" (the only one implemented).
  TAPEGRAD_ARG(std::string, hidden_act) = "silu";
  /// The standard deviation of the initial weights of a model built from scratch (> 0).
  TAPEGRAD_ARG(double, initializer_range) = 0.02;

 public:
  /// K: num_key_value_heads, or num_attention_heads when unset.
  std::int64_t kv_heads() const;
  /// d: head_dim, or hidden_size / num_attention_heads when unset.
  std::int64_t head_size() const;
};

/// Checks every field, in one place: ValueError naming the field and the value.
void validate(const LlamaConfig& config);

/// transformers' inv_freq for the config (its rope_init_functions), computed as it computes them,
/// in float32: 1 / rope_theta^(2p / d) for p < d / 2, then rope_scaling's rule. ValueError as
/// validate().
std::vector<float> llama_inv_freq(const LlamaConfig& config);

/// The attention of one layer: separate projections, rotary positions, grouped-query attention.
class LlamaAttention : public Module {
 public:
  LlamaAttention(const LlamaConfig& config, std::shared_ptr<Generator> generator);
  /// x (B, T, C) at positions 0 .. T-1, turned by `rotary`'s tables -> (B, T, C).
  Tensor forward(const Tensor& x, RotaryEmbedding& rotary);
  /// x (B, n, C) at positions L .. L+n-1 after the L positions cached: their keys and values are
  /// kept, each new query attends to every position up to its own -> (B, n, C), as forward in
  /// eval mode; records nothing (llama_generate.cpp).
  Tensor forward_cached(const Tensor& x, RotaryEmbedding& rotary);
  /// Forgets the cached keys and values.
  void reset_cache();
  /// Positions cached.
  std::size_t cached() const { return cached_; }

  std::shared_ptr<Linear> q_proj;  ///< "q_proj": Linear(C, H d)
  std::shared_ptr<Linear> k_proj;  ///< "k_proj": Linear(C, K d)
  std::shared_ptr<Linear> v_proj;  ///< "v_proj": Linear(C, K d)
  std::shared_ptr<Linear> o_proj;  ///< "o_proj": Linear(H d, C)
  std::shared_ptr<Dropout> attn_dropout;  ///< "attn_dropout": drops the weights in training
  std::int64_t num_heads, num_key_value_heads, head_dim;

  std::string type_name() const override { return "LlamaAttention"; }

 private:
  // The projections side by side, (B, T, (H + 2K) d), queries and keys turned from `offset`.
  Tensor rotated_qkv(const Tensor& x, RotaryEmbedding& rotary, std::int64_t offset);
  Array cached_k_, cached_v_;  // (B, capacity, K d): rows 0 .. cached_-1 filled, keys turned
  std::size_t cached_ = 0;
};

/// The feed-forward of one layer: down_proj(silu(gate_proj(x)) * up_proj(x)).
class LlamaMLP : public UnaryModule {
 public:
  LlamaMLP(const LlamaConfig& config, std::shared_ptr<Generator> generator);
  Tensor forward(const Tensor& x) override;  ///< (B, T, C) -> (B, T, C)

  std::shared_ptr<Linear> gate_proj;  ///< "gate_proj": Linear(C, F), through silu
  std::shared_ptr<Linear> up_proj;    ///< "up_proj": Linear(C, F)
  std::shared_ptr<Linear> down_proj;  ///< "down_proj": Linear(F, C)

  std::string type_name() const override { return "LlamaMLP"; }
};

/// One pre-norm layer: x + attention, then + MLP.
class LlamaDecoderLayer : public Module {
 public:
  LlamaDecoderLayer(const LlamaConfig& config, std::shared_ptr<Generator> generator);
  /// x (B, T, C) -> (B, T, C).
  Tensor forward(const Tensor& x, RotaryEmbedding& rotary);
  /// The same for n new positions after those cached (LlamaAttention::forward_cached).
  Tensor forward_cached(const Tensor& x, RotaryEmbedding& rotary);

  std::shared_ptr<LlamaAttention> self_attn;         ///< "self_attn"
  std::shared_ptr<LlamaMLP> mlp;                     ///< "mlp"
  std::shared_ptr<RMSNorm> input_layernorm;          ///< "input_layernorm"
  std::shared_ptr<RMSNorm> post_attention_layernorm; ///< "post_attention_layernorm"

  std::string type_name() const override { return "LlamaDecoderLayer"; }
};

/// transformers' LlamaModel: the token table, the layers, the final norm, the rotary tables.
class LlamaModel : public Module {
 public:
  LlamaModel(const LlamaConfig& config, std::shared_ptr<Generator> generator);

  std::shared_ptr<Embedding> embed_tokens;      ///< "embed_tokens": (V, C)
  std::shared_ptr<ModuleList> layers;           ///< "layers": num_hidden_layers LlamaDecoderLayers
  std::shared_ptr<RMSNorm> norm;                ///< "norm"
  std::shared_ptr<RotaryEmbedding> rotary_emb;  ///< "rotary_emb": (max_position_embeddings, d / 2)
                                                ///< tables, halves, llama_inv_freq's frequencies

  std::string type_name() const override { return "LlamaModel"; }
};

class LlamaForCausalLM : public CausalLM {
 public:
  /// Validates the config (ValueError naming the field) and initialises as transformers does:
  /// every Linear and the token table from N(0, initializer_range), biases 0, norms 1, drawn from
  /// `generator` (the default one if null), which also drives the dropout masks. Under a
  /// SkipInitGuard (a loader) nothing is drawn.
  explicit LlamaForCausalLM(LlamaConfig config, std::shared_ptr<Generator> generator = nullptr);

  /// idx (B, T) ids in [0, vocab_size), 1 <= T <= max_position_embeddings -> logits
  /// (B, T, vocab_size). ShapeError for another rank or a T out of range, IndexError for an id
  /// out of range.
  Tensor forward(const IndexArray& idx) override;
  /// The mean cross-entropy of forward(idx) against targets (B, T); targets equal to
  /// ignore_index are not counted.
  Tensor loss(const IndexArray& idx, const IndexArray& targets, std::int64_t ignore_index = -1);
  /// model.norm's output (B, T, C), before the head.
  Tensor features(const IndexArray& idx);
  /// The head: x (*, C) -> logits (*, vocab_size), by lm_head or the tied table.
  Tensor head(const Tensor& x);

  /// generate(*this, idx, options, gen) (generate.hpp), with the cache by default.
  IndexArray generate(const IndexArray& idx, const GenerateOptions& options, Generator& gen);

  // ---- CausalLM: what generate() calls ----
  std::int64_t vocab_size() const override { return config_.vocab_size(); }
  std::int64_t block_size() const override { return config_.max_position_embeddings(); }
  /// tokens (B, n) after the positions cached -> logits (B, vocab) of the last one, as in eval
  /// mode and without recording. ShapeError for another batch size than the cache's or positions
  /// past max_position_embeddings. A call that throws while the layers run leaves the cache empty.
  Array forward_cached(const IndexArray& tokens) override;
  void reset_cache() override;
  /// The head on the last position of features(idx) only.
  Array last_logits(const IndexArray& idx) override;
  /// When on, each decoder layer's forward runs under autograd::checkpoint: a step keeps each
  /// layer's input instead of its activations, and backward runs the layer again, the same bits.
  void recompute(bool on) override { recompute_ = on; }
  bool recompute() const override { return recompute_; }

  /// nn::parameter_groups(*this): the matrices decay, the norms and the token table do not.
  ParameterGroups parameter_groups() const;
  /// Parameters, a tied table counted once.
  std::int64_t num_params() const;

  const LlamaConfig& config() const { return config_; }
  /// The token table (V, C): model.embed_tokens.weight (also lm_head's weight when tied).
  Parameter token_embedding() const { return model->embed_tokens->weight; }

  std::shared_ptr<LlamaModel> model;        ///< "model"
  std::shared_ptr<Linear> lm_head;          ///< "lm_head", untied: Linear(C, V), no bias
  std::shared_ptr<TiedLinear> tied_lm_head; ///< "lm_head", tied: its weight is the token table

  std::string type_name() const override { return "LlamaForCausalLM"; }

 private:
  Tensor embed(const IndexArray& idx);  // the checks, then embed_tokens(idx)

  LlamaConfig config_;
  std::shared_ptr<Generator> generator_;
  std::size_t cache_batch_ = 0;  // the cache's batch size, while it holds positions
  bool recompute_ = false;
};

}  // namespace tapegrad::nn::transformer
