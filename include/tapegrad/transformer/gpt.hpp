// include/tapegrad/transformer/gpt.hpp
//
// GPT: a decoder-only Transformer in GPT-2's shape, assembled from tapegrad's public modules with
// nanoGPT's names, so a nanoGPT state dict loads key for key. The default config is nanoGPT's
// model; three choices of GPTConfig compose LLaMA's pieces into the same block instead, and a
// learner's own attention, MLP or norm goes in by name (registered in gpt_parts.hpp, as ALiBi's
// attention is) or by a factory (make_attention, make_mlp, make_norm: the built-in choices are
// factories too, attention_factory() and its kin):
//
//     transformer.wte       Embedding(vocab, C)           token table, TIED to lm_head.weight
//     transformer.wpe       Embedding(block_size, C)      position "learned" (GPT-2; default), or
//                           PositionalEncoding(C)         "sinusoidal", the seeds' buffer, with wte
//                                                         an Embeddings (table * sqrt(C),
//                                                         "wte.lut.weight"), or none with "rope"
//                                                         and "none"
//     transformer.drop      Dropout                       ("learned", "rope", "none"; the sinusoidal
//                                                         module has its own dropout)
//     transformer.h.i       Block: x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))      (pre-norm)
//         ln_1, ln_2        norm "layernorm": LayerNorm(C) (default), "rmsnorm": RMSNorm(C),
//                           either with eps norm_eps
//         attn              c_attn Linear(C, 3C) [-> rotary, position "rope": RotaryEmbedding
//                           turns q and k] -> causal_self_attention -> c_proj Linear(C, C)
//         mlp               mlp "gelu": c_fc Linear(C, 4C) -> GELU -> c_proj Linear(4C, C)
//                           (default); "swiglu": swiglu SwiGLU(C, 8C/3) = w2(silu(w1 x) * w3 x);
//                           then dropout
//     transformer.ln_f      the norm again
//     lm_head               TiedLinear: logits = x wte^T, no bias
//
// idx (B, T) token ids, T <= block_size -> logits (B, T, vocab). Initialisation: nanoGPT's,
// init_gpt_weights (gpt_init.hpp): every Linear and Embedding weight from N(0, 0.02), the residual
// projections (the c_proj weights, SwiGLU's w2) from N(0, 0.02 / sqrt(2 n_layer)), biases 0,
// norms 1 and 0, all drawn from one Generator. The GPT is a CausalLM (causal_lm.hpp): generate()
// samples text from it with a cache of keys and values, so each new token costs one position.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/nn/parameter_groups.hpp"
#include "tapegrad/nn/activation.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/embeddings.hpp"
#include "tapegrad/nn/layer_norm.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/module_list.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/rms_norm.hpp"
#include "tapegrad/nn/rotary_embedding.hpp"
#include "tapegrad/nn/swiglu.hpp"
#include "tapegrad/nn/tied_linear.hpp"
#include "tapegrad/nn/unary_module.hpp"
#include "tapegrad/transformer/causal_lm.hpp"
#include "tapegrad/transformer/generate.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn::transformer {

struct GPTConfig;
class BlockAttention;
/// Builds the attention of one Block for the config, drawing its parameters from the generator
/// (GPTConfig::make_attention).
using AttentionFactory =
    std::function<std::shared_ptr<BlockAttention>(const GPTConfig&, std::shared_ptr<Generator>)>;
/// Builds a norm, or the feed-forward branch of one Block: a module from (B, T, C) to (B, T, C)
/// (GPTConfig::make_norm, make_mlp).
using ModuleFactory =
    std::function<std::shared_ptr<UnaryModule>(const GPTConfig&, std::shared_ptr<Generator>)>;

/// A GPT's sizes and choices: nanoGPT's GPTConfig with the baby GPT's sizes as defaults, and the
/// block's pieces (position, norm, mlp) named as a program's flags would be. The defaults are
/// nanoGPT's model, parameter for parameter and draw for draw.
struct GPTConfig {
  GPTConfig(std::int64_t vocab_size, std::int64_t block_size)
      : vocab_size_(vocab_size), block_size_(block_size) {}
  /// Number of token ids (>= 1): rows of the token table, columns of the logits.
  TAPEGRAD_ARG(std::int64_t, vocab_size);
  /// The longest context (>= 1): rows of the position table (or of the rotary tables).
  TAPEGRAD_ARG(std::int64_t, block_size);
  /// Number of Blocks (>= 1; default 4).
  TAPEGRAD_ARG(std::int64_t, n_layer) = 4;
  /// Attention heads per Block (>= 1, dividing n_embd; default 4).
  TAPEGRAD_ARG(std::int64_t, n_head) = 4;
  /// Width C of the residual stream (>= 1; default 128).
  TAPEGRAD_ARG(std::int64_t, n_embd) = 128;
  /// Dropout probability after the embeddings, on the attention weights and after each residual
  /// branch, in [0, 1] (default 0).
  TAPEGRAD_ARG(double, dropout) = 0.0;
  /// "learned" (an Embedding of positions, GPT-2; default), "sinusoidal" (the seeds' fixed table
  /// added to the token embedding scaled by sqrt(n_embd)), "rope" (no position table: each
  /// attention turns its queries and keys, RoFormer's rotary embedding; n_embd / n_head even) or
  /// "none" (no position table and no turn: the attention alone knows the order, through its
  /// causal mask, or a bias such as ALiBi's in an attention of make_attention).
  TAPEGRAD_ARG(std::string, position) = "learned";
  /// The attention of every Block, by name: "causal" (CausalSelfAttention, nanoGPT's; default),
  /// "alibi" (AlibiAttention, alibi.hpp; with position "none"), or a learner's, registered with
  /// register_attention (gpt_parts.hpp).
  TAPEGRAD_ARG(std::string, attention) = "causal";
  /// "layernorm" (LayerNorm, weight and bias, GPT-2's; default) or "rmsnorm" (RMSNorm, weight
  /// only, LLaMA's), for ln_1, ln_2 and ln_f; eps norm_eps either way; or a learner's norm
  /// registered with register_norm.
  TAPEGRAD_ARG(std::string, norm) = "layernorm";
  /// The epsilon of every norm, in (0, 1) (default 1e-5, nn.LayerNorm's and GPT-2's
  /// layer_norm_epsilon).
  TAPEGRAD_ARG(double, norm_eps) = 1e-5;
  /// "gelu" (c_fc 4C -> GELU -> c_proj, nanoGPT's; default), "relu_squared" (the same with
  /// relu(x)^2 for GELU: Primer's, and the nanoGPT speedruns') or "swiglu" (SwiGLU with hidden
  /// width 8C/3 rounded down, LLaMA's, about the parameters of the 4C MLP); or a learner's MLP
  /// registered with register_mlp.
  TAPEGRAD_ARG(std::string, mlp) = "gelu";
  /// The GELU of mlp "gelu": "none" (erf, nanoGPT's nn.GELU(); default) or "tanh" (GPT-2's).
  TAPEGRAD_ARG(std::string, gelu) = "none";

  // ---- a learner's own pieces, unnamed (each null by default: the named choice above) ----
  // A factory given here overrides the name; the model then cannot be described by its names,
  // so a training checkpoint refuses it. Register the part by name (gpt_parts.hpp) to save it.
  /// Builds the attention of every Block, in place of the one `attention` names: grouped-query
  /// attention, ... Called once per Block, in order; the module is registered as "attn". With
  /// position "rope" it must turn q and k itself.
  TAPEGRAD_ARG(AttentionFactory, make_attention) = nullptr;
  /// Builds the feed-forward branch of every Block ("mlp"), in place of MLP; mlp and gelu are
  /// then not used.
  TAPEGRAD_ARG(ModuleFactory, make_mlp) = nullptr;
  /// Builds every norm (ln_1 and ln_2 of each Block, then ln_f), in place of the choice of norm;
  /// norm and norm_eps are then not used.
  TAPEGRAD_ARG(ModuleFactory, make_norm) = nullptr;
};

/// Checks every field of `config`, in one place: ValueError naming the field and, for the
/// choices, the accepted values. GPT's constructor calls it; a program can call it first.
void validate(const GPTConfig& config);

/// What a Block's attention is: a module from x (B, T, C) at positions 0 .. T-1 to (B, T, C), each
/// position attending to itself and those before it. CausalSelfAttention is the built-in one; a
/// learner's derives from this class and plugs in through GPTConfig::make_attention. Only forward
/// is required: the sampler's cache is optional.
class BlockAttention : public Module {
 public:
  /// attention, when given, receives the weights (B, n_head, T, T), if the module has them.
  virtual Tensor forward(const Tensor& x, Array* attention = nullptr) = 0;

  // ---- generate()'s cache of keys and values (optional) ----
  /// Whether forward_cached is implemented. Default false: the GPT then samples without a cache,
  /// running the whole context again for each new token.
  virtual bool supports_cache() const { return false; }
  /// x (B, n, C) at positions L .. L+n-1, after the L positions the module has cached -> (B, n, C)
  /// as forward gives them in eval mode, keeping what later positions need; records nothing. By
  /// default refuses, naming the module.
  virtual Tensor forward_cached(const Tensor& x);
  /// Forgets what forward_cached kept: the next call starts at position 0.
  virtual void reset_cache() {}
};

/// The factories a GPT builds its Blocks with: the config's own where it has one (make_attention,
/// make_mlp, make_norm), else the part registered under the name it gives (attention, mlp, norm;
/// gpt_parts.hpp). Each built-in is a factory like a learner's:
/// [](const GPTConfig& c, auto generator) { return std::make_shared<MLP>(c, generator); }
AttentionFactory attention_factory(const GPTConfig& config);
ModuleFactory mlp_factory(const GPTConfig& config);
ModuleFactory norm_factory(const GPTConfig& config);

/// Causal multi-head self-attention with one fused QKV projection (nanoGPT's CausalSelfAttention),
/// with position "rope" the queries and keys turned by a RotaryEmbedding first.
class CausalSelfAttention : public BlockAttention {
 public:
  CausalSelfAttention(const GPTConfig& config, std::shared_ptr<Generator> generator);
  /// x (B, T, C) at positions 0 .. T-1 -> (B, T, C). attention, when given, receives the weights
  /// (B, n_head, T, T).
  Tensor forward(const Tensor& x, Array* attention = nullptr) override;
  /// Keeps the keys and values of every position seen, (B, block_size, C), so that a new position
  /// costs one query against them (gpt_generate.cpp); with rope the new queries and keys turn at
  /// their absolute positions first.
  bool supports_cache() const override { return true; }
  Tensor forward_cached(const Tensor& x) override;
  void reset_cache() override;

  std::shared_ptr<Linear> c_attn;           ///< "c_attn": Linear(C, 3C), queries | keys | values
  std::shared_ptr<RotaryEmbedding> rotary;  ///< "rotary", position "rope" only (else null):
                                            ///< tables (block_size, C / n_head / 2), not saved
  std::shared_ptr<Linear> c_proj;           ///< "c_proj": Linear(C, C), a residual projection
  std::shared_ptr<Dropout> attn_dropout;    ///< "attn_dropout": its p, mode and mask stream drop
                                            ///< the attention weights inside the op
  std::shared_ptr<Dropout> resid_dropout;   ///< "resid_dropout"
  std::int64_t n_head;

 private:
  std::size_t block_size_;
  Array cached_k_, cached_v_;  // (B, block_size, C), rows 0 .. cached_-1 filled
  std::size_t cached_ = 0;
};

/// The feed-forward branch, by GPTConfig::mlp. Exactly one of the three sets below is present.
///   "gelu"          c_fc Linear(C, 4C) -> GELU -> c_proj Linear(4C, C) -> dropout    (nanoGPT's)
///   "relu_squared"  c_fc -> ReLUSquared -> c_proj -> dropout                (Primer's)
///   "swiglu"        swiglu: SwiGLU(C, 8C/3, bias) = w2(silu(w1 x) * w3 x) -> dropout (LLaMA's)
class MLP : public UnaryModule {
 public:
  MLP(const GPTConfig& config, std::shared_ptr<Generator> generator);
  Tensor forward(const Tensor& x) override;  ///< (B, T, C) -> (B, T, C)

  std::shared_ptr<Linear> c_fc;                ///< "c_fc", mlp "gelu" and "relu_squared"
  std::shared_ptr<GELU> gelu;                  ///< "gelu", mlp "gelu"
  std::shared_ptr<ReLUSquared> relu_squared;   ///< "relu_squared", mlp "relu_squared"
  std::shared_ptr<Linear> c_proj;  ///< "c_proj", mlp "gelu" and "relu_squared": a residual projection
  std::shared_ptr<SwiGLU> swiglu;    ///< "swiglu", mlp "swiglu": its w2 is a residual projection
  std::shared_ptr<Dropout> dropout;  ///< "dropout"
};

/// One pre-norm Transformer block: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)), each piece built
/// by its factory (attention_factory, mlp_factory, norm_factory): by default a LayerNorm or an
/// RMSNorm (GPTConfig::norm), CausalSelfAttention and MLP. A piece of a known type is reached with
/// a cast: dynamic_cast<CausalSelfAttention&>(*block.attn).
class Block : public Module {
 public:
  /// ValueError when a factory returns null.
  Block(const GPTConfig& config, std::shared_ptr<Generator> generator);
  /// x (B, T, C) -> (B, T, C); attention as BlockAttention::forward.
  Tensor forward(const Tensor& x, Array* attention = nullptr);

  std::shared_ptr<UnaryModule> ln_1;     ///< "ln_1"
  std::shared_ptr<BlockAttention> attn;  ///< "attn"
  std::shared_ptr<UnaryModule> ln_2;     ///< "ln_2"
  std::shared_ptr<UnaryModule> mlp;      ///< "mlp"
};

/// nanoGPT's `transformer` ModuleDict: the embeddings, the blocks and the final norm. Which
/// embeddings are set follows the config's position.
class GPTTransformer : public Module {
 public:
  GPTTransformer(const GPTConfig& config, std::shared_ptr<Generator> generator);

  std::shared_ptr<Embedding> wte;  ///< "wte", positions learned, rope and none: the token table
  std::shared_ptr<Embedding> wpe;  ///< "wpe", learned positions: (block_size, C)
  std::shared_ptr<Dropout> drop;   ///< "drop", positions learned, rope and none
  std::shared_ptr<Embeddings>
      wte_scaled;  ///< "wte", sinusoidal: table * sqrt(C) ("wte.lut.weight")
  std::shared_ptr<PositionalEncoding>
      wpe_table;                    ///< "wpe", sinusoidal: buffer "wpe.pe" and its dropout
  std::shared_ptr<ModuleList> h;      ///< "h": n_layer Blocks
  std::shared_ptr<UnaryModule> ln_f;  ///< "ln_f", by norm_factory

  std::string type_name() const override { return "ModuleDict"; }
};

/// A model's parameters in two groups: those weight decay applies to, and the others
/// (nn/parameter_groups.hpp).
using nn::ParameterGroups;

class GPT : public CausalLM {
 public:
  /// Validates the config (validate(): ValueError naming the field) and initialises as nanoGPT
  /// (init_gpt_weights) from `generator` (the default one if null), which also drives the
  /// dropout masks.
  explicit GPT(GPTConfig config, std::shared_ptr<Generator> generator = nullptr);
  ~GPT() override;

  /// idx (B, T) ids in [0, vocab_size), T <= block_size -> logits (B, T, vocab_size).
  /// ShapeError for another rank or T > block_size, IndexError for an id out of range.
  Tensor forward(const IndexArray& idx) override;
  /// The mean cross-entropy of forward(idx) against targets (B, T); targets equal to
  /// ignore_index are not counted (nanoGPT's F.cross_entropy(..., ignore_index=-1)).
  Tensor loss(const IndexArray& idx, const IndexArray& targets, std::int64_t ignore_index = -1);
  /// The final norm's output (B, T, C), before the head. attention, when given, receives
  /// each block's weights (B, n_head, T, T), block by block.
  Tensor features(const IndexArray& idx, std::vector<Array>* attention = nullptr);

  /// generate(*this, idx, options, gen) (generate.hpp): nanoGPT's sampler, with the cache by
  /// default. -> (B, t + max_new_tokens).
  IndexArray generate(const IndexArray& idx, const GenerateOptions& options, Generator& gen);

  // ---- CausalLM: what generate() calls ----
  std::int64_t vocab_size() const override { return config_.vocab_size(); }
  std::int64_t block_size() const override { return config_.block_size(); }
  /// tokens (B, n) after the positions cached -> logits (B, vocab) of the last one, as in eval
  /// mode (no dropout) and without recording. Each block's attention caches what it needs
  /// (BlockAttention::forward_cached). ShapeError for another batch size than the cache's or
  /// positions past block_size; ValueError when an attention has no cache (supports_cache()). A
  /// call that throws while the blocks run leaves the cache empty, never half advanced.
  Array forward_cached(const IndexArray& tokens) override;
  void reset_cache() override;
  /// Whether every Block's attention supports the cache; generate() samples without it if not.
  bool supports_cache() const override;
  /// When on, each Block's forward runs under autograd::checkpoint: a step keeps each Block's
  /// input instead of its activations, and backward runs the Block again, the same bits (its
  /// dropout masks included). features() with `attention` runs the Blocks plainly.
  void recompute(bool on) override { recompute_ = on; }
  bool recompute() const override { return recompute_; }
  /// The head on the last position of features(idx) only.
  Array last_logits(const IndexArray& idx) override;

  /// nn::parameter_groups(*this): `decay` holds the Linear weights (the matrices), `no_decay`
  /// everything else (biases, norms, the token table shared with lm_head, the learned position
  /// table). The model does not know its optimizer; the caller builds it, e.g.
  /// AdamW({{g.decay, options}, {g.no_decay, options_without_decay}}).
  ParameterGroups parameter_groups() const;

  /// Parameters, the tied table counted once; non_embedding leaves the learned position table out
  /// (nanoGPT's get_num_params).
  std::int64_t num_params(bool non_embedding = true) const;
  /// Training FLOPs per token by nanoGPT's estimate_mfu: 6 N + 12 L H Q T, with N = num_params(),
  /// Q = C / H and T = block_size.
  double flops_per_token() const;

  const GPTConfig& config() const { return config_; }
  /// The token table (vocab_size, C), the same Parameter as lm_head.weight.
  Parameter token_embedding() const;

  std::shared_ptr<GPTTransformer> transformer;  ///< "transformer"
  std::shared_ptr<TiedLinear> lm_head;          ///< "lm_head": weight is the token table

 private:
  Tensor embed(const IndexArray& idx);  // tokens + positions, (B, T, C)
  struct KVCache;                       // gpt_generate.cpp

  GPTConfig config_;
  std::shared_ptr<Generator> generator_;
  std::shared_ptr<KVCache> cache_;  // null: nothing cached
  bool recompute_ = false;
};

}  // namespace tapegrad::nn::transformer
