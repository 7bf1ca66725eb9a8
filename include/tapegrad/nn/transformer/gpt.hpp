// include/tapegrad/nn/transformer/gpt.hpp
//
// GPT: a decoder-only Transformer in GPT-2's shape, assembled from tapegrad's public modules with
// nanoGPT's names, so a nanoGPT state dict loads key for key:
//
//     transformer.wte       Embedding(vocab, C)           token table, TIED to lm_head.weight
//     transformer.wpe       Embedding(block_size, C)      learned positions (GPT-2), or
//                           PositionalEncoding(C)         the seeds' sinusoidal buffer, with wte an
//                                                         Embeddings (table * sqrt(C), "wte.lut.weight")
//     transformer.drop      Dropout                       (learned positions; the sinusoidal module
//                                                         has its own dropout)
//     transformer.h.i       Block: x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))       (pre-LayerNorm)
//         attn              c_attn Linear(C, 3C) -> causal_self_attention -> c_proj Linear(C, C)
//         mlp               c_fc Linear(C, 4C) -> GELU -> c_proj Linear(4C, C) -> dropout
//     transformer.ln_f      LayerNorm(C)
//     lm_head               TiedLinear: logits = x wte^T, no bias
//
// idx (B, T) token ids, T <= block_size -> logits (B, T, vocab). Initialisation as nanoGPT: every
// Linear and Embedding weight from N(0, 0.02), the residual projections (the c_proj weights) from
// N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorms 1 and 0, all drawn from one Generator.
// generate() samples text, with a cache of keys and values so each new token costs one position.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/nn/activation.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/embeddings.hpp"
#include "tapegrad/nn/layer_norm.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/module_list.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/tied_linear.hpp"
#include "tapegrad/random.hpp"

namespace tapegrad::nn::transformer {

/// A GPT's sizes and choices; nanoGPT's GPTConfig, with the baby GPT's sizes as defaults.
class GPTConfig {
 public:
  GPTConfig(std::int64_t vocab_size, std::int64_t block_size)
      : vocab_size_(vocab_size), block_size_(block_size) {}
  /// Number of token ids (>= 1): rows of the token table, columns of the logits.
  GPTConfig& vocab_size(std::int64_t v) {
    vocab_size_ = v;
    return *this;
  }
  std::int64_t vocab_size() const { return vocab_size_; }
  /// The longest context (>= 1): rows of the position table.
  GPTConfig& block_size(std::int64_t v) {
    block_size_ = v;
    return *this;
  }
  std::int64_t block_size() const { return block_size_; }
  /// Number of Blocks (>= 1; default 4).
  GPTConfig& n_layer(std::int64_t v) {
    n_layer_ = v;
    return *this;
  }
  std::int64_t n_layer() const { return n_layer_; }
  /// Attention heads per Block (>= 1, dividing n_embd; default 4).
  GPTConfig& n_head(std::int64_t v) {
    n_head_ = v;
    return *this;
  }
  std::int64_t n_head() const { return n_head_; }
  /// Width C of the residual stream (>= 1; default 128).
  GPTConfig& n_embd(std::int64_t v) {
    n_embd_ = v;
    return *this;
  }
  std::int64_t n_embd() const { return n_embd_; }
  /// Dropout probability after the embeddings, on the attention weights and after each residual
  /// branch, in [0, 1] (default 0).
  GPTConfig& dropout(double v) {
    dropout_ = v;
    return *this;
  }
  double dropout() const { return dropout_; }
  /// "learned" (an Embedding of positions, GPT-2; default) or "sinusoidal" (the seeds' fixed table
  /// added to the token embedding scaled by sqrt(n_embd)).
  GPTConfig& position(std::string v) {
    position_ = std::move(v);
    return *this;
  }
  const std::string& position() const { return position_; }
  /// The GELU of the MLPs: "none" (erf, nanoGPT's nn.GELU(); default) or "tanh" (GPT-2's).
  GPTConfig& gelu(std::string v) {
    gelu_ = std::move(v);
    return *this;
  }
  const std::string& gelu() const { return gelu_; }

 private:
  std::int64_t vocab_size_, block_size_;
  std::int64_t n_layer_ = 4, n_head_ = 4, n_embd_ = 128;
  double dropout_ = 0.0;
  std::string position_ = "learned";
  std::string gelu_ = "none";
};

/// Causal multi-head self-attention with one fused QKV projection (nanoGPT's CausalSelfAttention).
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const GPTConfig& config, std::shared_ptr<Generator> generator);
  /// x (B, T, C) -> (B, T, C). attention, when given, receives the weights (B, n_head, T, T).
  Tensor forward(const Tensor& x, Array* attention = nullptr);

  std::shared_ptr<Linear> c_attn;          ///< "c_attn": Linear(C, 3C), queries | keys | values
  std::shared_ptr<Linear> c_proj;          ///< "c_proj": Linear(C, C), a residual projection
  std::shared_ptr<Dropout> attn_dropout;   ///< "attn_dropout": its p, mode and mask stream drop the
                                           ///< attention weights inside the op
  std::shared_ptr<Dropout> resid_dropout;  ///< "resid_dropout"
  std::int64_t n_head;
};

/// The feed-forward branch: c_fc Linear(C, 4C) -> GELU -> c_proj Linear(4C, C) -> dropout.
class MLP : public Module {
 public:
  MLP(const GPTConfig& config, std::shared_ptr<Generator> generator);
  Tensor forward(const Tensor& x);  ///< (B, T, C) -> (B, T, C)

  std::shared_ptr<Linear> c_fc;      ///< "c_fc"
  std::shared_ptr<GELU> gelu;        ///< "gelu"
  std::shared_ptr<Linear> c_proj;    ///< "c_proj": a residual projection
  std::shared_ptr<Dropout> dropout;  ///< "dropout"
};

/// One pre-LayerNorm Transformer block: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)).
class Block : public Module {
 public:
  Block(const GPTConfig& config, std::shared_ptr<Generator> generator);
  /// x (B, T, C) -> (B, T, C); attention as CausalSelfAttention::forward.
  Tensor forward(const Tensor& x, Array* attention = nullptr);

  std::shared_ptr<LayerNorm> ln_1;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<LayerNorm> ln_2;
  std::shared_ptr<MLP> mlp;
};

/// nanoGPT's `transformer` ModuleDict: the embeddings, the blocks and the final LayerNorm. Exactly
/// one of each pair below is set, by the config's position choice.
class GPTTransformer : public Module {
 public:
  GPTTransformer(const GPTConfig& config, std::shared_ptr<Generator> generator);

  std::shared_ptr<Embedding> wte;  ///< "wte", learned positions: the token table
  std::shared_ptr<Embedding> wpe;  ///< "wpe", learned positions: (block_size, C)
  std::shared_ptr<Dropout> drop;   ///< "drop", learned positions
  std::shared_ptr<Embeddings>
      wte_scaled;  ///< "wte", sinusoidal: table * sqrt(C) ("wte.lut.weight")
  std::shared_ptr<PositionalEncoding>
      wpe_table;                    ///< "wpe", sinusoidal: buffer "wpe.pe" and its dropout
  std::shared_ptr<ModuleList> h;    ///< "h": n_layer Blocks
  std::shared_ptr<LayerNorm> ln_f;  ///< "ln_f"

  std::string type_name() const override { return "ModuleDict"; }
};

/// How generate() samples.
class GenerateOptions {
 public:
  explicit GenerateOptions(std::int64_t max_new_tokens) : max_new_tokens_(max_new_tokens) {}
  /// Tokens to append (>= 0).
  GenerateOptions& max_new_tokens(std::int64_t v) {
    max_new_tokens_ = v;
    return *this;
  }
  std::int64_t max_new_tokens() const { return max_new_tokens_; }
  /// Logits are divided by it before the softmax (> 0; default 1). Small: nearly greedy.
  GenerateOptions& temperature(double v) {
    temperature_ = v;
    return *this;
  }
  double temperature() const { return temperature_; }
  /// Sample only among the k most likely tokens (>= 1; ties at the k-th value are kept, as
  /// nanoGPT's torch.topk threshold does). Unset: all tokens. top_k(1) is greedy decoding.
  GenerateOptions& top_k(std::optional<std::int64_t> v) {
    top_k_ = v;
    return *this;
  }
  std::optional<std::int64_t> top_k() const { return top_k_; }
  /// Keep the keys and values of earlier positions (default true): each new token then costs one
  /// position. false re-runs the model on the whole context for every token (same tokens).
  GenerateOptions& use_cache(bool v) {
    use_cache_ = v;
    return *this;
  }
  bool use_cache() const { return use_cache_; }

 private:
  std::int64_t max_new_tokens_;
  double temperature_ = 1.0;
  std::optional<std::int64_t> top_k_;
  bool use_cache_ = true;
};

/// A model's parameters in two groups: those weight decay applies to, and the others.
struct ParameterGroups {
  std::vector<Parameter> decay, no_decay;
};

class GPT : public Module {
 public:
  /// Validates the config (ValueError naming the field) and initialises as nanoGPT from
  /// `generator` (the default one if null), which also drives the dropout masks.
  explicit GPT(GPTConfig config, std::shared_ptr<Generator> generator = nullptr);

  /// idx (B, T) ids in [0, vocab_size), T <= block_size -> logits (B, T, vocab_size).
  /// ShapeError for another rank or T > block_size, IndexError for an id out of range.
  Tensor forward(const IndexArray& idx);
  /// The mean cross-entropy of forward(idx) against targets (B, T); targets equal to
  /// ignore_index are not counted (nanoGPT's F.cross_entropy(..., ignore_index=-1)).
  Tensor loss(const IndexArray& idx, const IndexArray& targets, std::int64_t ignore_index = -1);
  /// The final LayerNorm's output (B, T, C), before the head. attention, when given, receives
  /// each block's weights (B, n_head, T, T), block by block.
  Tensor features(const IndexArray& idx, std::vector<Array>* attention = nullptr);

  /// Appends options.max_new_tokens() sampled tokens to idx (B, t), t >= 1, drawing from `gen`
  /// (one uniform double per row per token, rows in order), under NoGradGuard and in eval mode
  /// (no dropout; the module's mode is restored afterwards). The context is the last block_size tokens;
  /// when it is full it restarts from its last block_size / 2 tokens (whose keys and values are
  /// then computed again), so a cached token costs about two positions, not block_size. The
  /// uncached path follows the same rule and gives the same tokens. -> (B, t + max_new_tokens).
  IndexArray generate(const IndexArray& idx, const GenerateOptions& options, Generator& gen);

  /// The parameters as nanoGPT's optimizer groups them: `decay` holds the Linear weights (the
  /// matrices), `no_decay` everything else (biases, LayerNorms, the token table shared with
  /// lm_head, the learned position table). The model does not know its optimizer; the caller
  /// builds it, e.g. AdamW({{g.decay, options}, {g.no_decay, options_without_decay}}).
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
  void init_weights();
  struct KVCache;  // gpt_generate.cpp
  Array cached_logits(const IndexArray& tokens,
                      KVCache& cache);              // appends tokens (B, n); (B, vocab)
  Array uncached_logits(const IndexArray& window);  // the whole window again; (B, vocab)

  GPTConfig config_;
  std::shared_ptr<Generator> generator_;
};

}  // namespace tapegrad::nn::transformer
