// src/transformer/llama.cpp: the Llama's config checks, its rotary frequencies, its modules and
// forward pass (transformer/llama.hpp). Its cached forward for the sampler is llama_generate.cpp.
//
// The forward pass, for idx (B, T), C = hidden_size, H query heads and K key/value heads of d:
//   x = embed_tokens(idx)                                                 (B, T, C)
//   per layer:
//     qkv = rotary(cat(q_proj(n), k_proj(n), v_proj(n)))   n = input_layernorm(x)
//                                                          (B, T, (H + 2K) d), q and k turned
//     x = x + o_proj(causal_self_attention(qkv, H, n_kv_head K))          (B, T, C)
//     n = post_attention_layernorm(x)
//     x = x + down_proj(silu(gate_proj(n)) * up_proj(n))
//   logits = lm_head(norm(x))                                             (B, T, V)
// transformers computes the same with q, k and v as (B, heads, T, d) tensors and repeat_kv copying
// each key/value head H / K times; here the fused attention op reads the packed projections in
// place, and each key/value head once.
#include "tapegrad/transformer/llama.hpp"

#include <cmath>
#include <numbers>

#include "tapegrad/autograd/checkpoint.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/ops/activation.hpp"
#include "tapegrad/ops/causal_attention.hpp"
#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/loss.hpp"
#include "tapegrad/ops/shape.hpp"

namespace tapegrad::nn::transformer {

// ---- the config ---------------------------------------------------------------------------------

std::int64_t LlamaConfig::kv_heads() const {
  return num_key_value_heads().value_or(num_attention_heads());
}

std::int64_t LlamaConfig::head_size() const {
  return head_dim() ? *head_dim()
                    : hidden_size() / std::max<std::int64_t>(1, num_attention_heads());
}

void validate(const LlamaConfig& c) {
  auto positive = [](const char* name, std::int64_t v) {
    check<ValueError>(v >= 1, "LlamaConfig: expected ", name, " >= 1, got ", v);
  };
  positive("vocab_size", c.vocab_size());
  positive("hidden_size", c.hidden_size());
  positive("intermediate_size", c.intermediate_size());
  positive("num_hidden_layers", c.num_hidden_layers());
  positive("num_attention_heads", c.num_attention_heads());
  positive("max_position_embeddings", c.max_position_embeddings());
  const std::int64_t H = c.num_attention_heads(), K = c.kv_heads();
  check<ValueError>(K >= 1 && H % K == 0,
                    "LlamaConfig: expected num_key_value_heads dividing num_attention_heads = ", H,
                    " (each key/value head serves num_attention_heads / num_key_value_heads query "
                    "heads), got ",
                    K);
  if (c.head_dim())
    check<ValueError>(*c.head_dim() >= 2 && *c.head_dim() % 2 == 0,
                      "LlamaConfig: expected an even head_dim >= 2 (its columns turn in pairs), "
                      "got ",
                      *c.head_dim());
  else
    check<ValueError>(c.hidden_size() % H == 0 && (c.hidden_size() / H) % 2 == 0,
                      "LlamaConfig: expected hidden_size to be an even multiple of "
                      "num_attention_heads (the head size hidden_size / num_attention_heads turns "
                      "in pairs), got hidden_size = ",
                      c.hidden_size(), " and num_attention_heads = ", H);
  check<ValueError>(c.rms_norm_eps() > 0.0 && c.rms_norm_eps() < 1.0,
                    "LlamaConfig: expected rms_norm_eps in (0, 1), got ", c.rms_norm_eps());
  check<ValueError>(c.rope_theta() > 0.0 && std::isfinite(c.rope_theta()),
                    "LlamaConfig: expected a finite rope_theta > 0, got ", c.rope_theta());
  check<ValueError>(c.hidden_act() == "silu", "LlamaConfig: expected hidden_act \"silu\", got \"",
                    c.hidden_act(), "\"");
  check<ValueError>(c.initializer_range() > 0.0 && std::isfinite(c.initializer_range()),
                    "LlamaConfig: expected a finite initializer_range > 0, got ",
                    c.initializer_range());
  ops::check_dropout_probability(c.attention_dropout());
  if (const auto& s = c.rope_scaling()) {
    check<ValueError>(s->rope_type == "linear" || s->rope_type == "llama3",
                      "LlamaConfig: expected rope_scaling of rope_type \"linear\" or \"llama3\", "
                      "got \"",
                      s->rope_type, "\"");
    check<ValueError>(s->factor > 0.0 && std::isfinite(s->factor),
                      "LlamaConfig: expected a finite rope_scaling factor > 0, got ", s->factor);
    if (s->rope_type == "llama3") {
      check<ValueError>(s->low_freq_factor > 0.0 && s->high_freq_factor > s->low_freq_factor &&
                            std::isfinite(s->high_freq_factor),
                        "LlamaConfig: expected rope_scaling 0 < low_freq_factor < "
                        "high_freq_factor, got ",
                        s->low_freq_factor, " and ", s->high_freq_factor);
      check<ValueError>(s->original_max_position_embeddings >= 1,
                        "LlamaConfig: expected rope_scaling original_max_position_embeddings >= "
                        "1, got ",
                        s->original_max_position_embeddings);
    }
  }
}

// transformers' _compute_default_rope_parameters and, for a rope_scaling, its
// _compute_linear_scaling_rope_parameters or _compute_llama3_parameters, in its float32 steps:
//   inv_freq_p = 1 / theta^(float(2p) / d)                                   p < d / 2
//   linear:  inv_freq_p / factor
//   llama3:  wavelen_p = 2 pi / inv_freq_p; with L = original_max_position_embeddings,
//            wavelen_p < L / high_freq_factor            kept
//            wavelen_p > L / low_freq_factor             inv_freq_p / factor
//            between: (1 - s) inv_freq_p / factor + s inv_freq_p,
//                     s = (L / wavelen_p - low_freq_factor) / (high_freq_factor - low_freq_factor)
// (PyTorch computes `a / tensor` as reciprocal(tensor) * a, which is written out below.)
std::vector<float> llama_inv_freq(const LlamaConfig& config) {
  validate(config);
  const std::size_t d = std::size_t(config.head_size()), half = d / 2;
  const auto theta = static_cast<float>(config.rope_theta());
  std::vector<float> inv_freq(half);
  for (std::size_t p = 0; p < half; ++p) {
    const float exponent = float(2 * p) / float(d);
    inv_freq[p] = 1.0f / static_cast<float>(std::pow(double(theta), double(exponent)));
  }
  const auto& scaling = config.rope_scaling();
  if (!scaling) return inv_freq;
  const auto factor = static_cast<float>(scaling->factor);
  if (scaling->rope_type == "linear") {
    for (float& f : inv_freq) f = f / factor;
    return inv_freq;
  }
  const auto L = double(scaling->original_max_position_embeddings);
  const auto low = static_cast<float>(L / scaling->low_freq_factor),
             high = static_cast<float>(L / scaling->high_freq_factor);
  const auto two_pi = static_cast<float>(2.0 * std::numbers::pi);
  const auto low_factor = static_cast<float>(scaling->low_freq_factor),
             band = static_cast<float>(scaling->high_freq_factor - scaling->low_freq_factor);
  for (float& f : inv_freq) {
    const float wavelen = (1.0f / f) * two_pi;
    const float divided = wavelen > low ? f / factor : f;
    const float smooth = ((1.0f / wavelen) * static_cast<float>(L) - low_factor) / band;
    const bool medium = !(wavelen < high) && !(wavelen > low);
    f = medium ? (1.0f - smooth) * divided / factor + smooth * divided : divided;
  }
  return inv_freq;
}

namespace {
const LlamaConfig& validated(const LlamaConfig& c) {
  validate(c);
  return c;
}

std::shared_ptr<Linear> linear(std::int64_t in, std::int64_t out, bool bias,
                               const std::shared_ptr<Generator>& generator) {
  return std::make_shared<Linear>(LinearOptions(in, out).bias(bias), generator);
}
}  // namespace

// ---- the modules --------------------------------------------------------------------------------

LlamaAttention::LlamaAttention(const LlamaConfig& config, std::shared_ptr<Generator> generator)
    : num_heads(config.num_attention_heads()),
      num_key_value_heads(config.kv_heads()),
      head_dim(config.head_size()) {
  const std::int64_t C = config.hidden_size();
  const bool bias = config.attention_bias();
  q_proj = register_module("q_proj", linear(C, num_heads * head_dim, bias, generator));
  k_proj = register_module("k_proj", linear(C, num_key_value_heads * head_dim, bias, generator));
  v_proj = register_module("v_proj", linear(C, num_key_value_heads * head_dim, bias, generator));
  o_proj = register_module("o_proj", linear(num_heads * head_dim, C, bias, generator));
  attn_dropout = register_module("attn_dropout",
                                 std::make_shared<Dropout>(config.attention_dropout(), generator));
}

Tensor LlamaAttention::rotated_qkv(const Tensor& x, RotaryEmbedding& rotary, std::int64_t offset) {
  const Tensor qkv =
      ops::cat({q_proj->forward(x), k_proj->forward(x), v_proj->forward(x)}, 2);  // q | k | v
  return rotary.forward_qkv(qkv, offset, num_key_value_heads);
}

Tensor LlamaAttention::forward(const Tensor& x, RotaryEmbedding& rotary) {
  autograd::ModuleScope scope(type_name(), path());
  const Tensor qkv = rotated_qkv(x, rotary, 0);  // (B, T, (H + 2K) d)
  const double p = attn_dropout->options().p();
  auto options = CausalAttentionOptions()
                     .n_kv_head(num_key_value_heads)
                     .dropout(p)
                     .training(attn_dropout->is_training());
  if (attn_dropout->is_training() && p > 0.0 && qkv.numel() > 0)
    options.dropout_stream(attn_dropout->next_stream());
  return o_proj->forward(ops::causal_self_attention(qkv, num_heads, options));  // (B, T, C)
}

LlamaMLP::LlamaMLP(const LlamaConfig& config, std::shared_ptr<Generator> generator) {
  const std::int64_t C = config.hidden_size(), F = config.intermediate_size();
  const bool bias = config.mlp_bias();
  gate_proj = register_module("gate_proj", linear(C, F, bias, generator));
  up_proj = register_module("up_proj", linear(C, F, bias, generator));
  down_proj = register_module("down_proj", linear(F, C, bias, generator));
}

Tensor LlamaMLP::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  return down_proj->forward(ops::swiglu(gate_proj->forward(x), up_proj->forward(x)));
}

// transformers' order of registration: self_attn, mlp, then the two norms.
LlamaDecoderLayer::LlamaDecoderLayer(const LlamaConfig& config,
                                     std::shared_ptr<Generator> generator) {
  const auto norm = [&] {
    return std::make_shared<RMSNorm>(
        RMSNormOptions({config.hidden_size()}).eps(config.rms_norm_eps()));
  };
  self_attn = register_module("self_attn", std::make_shared<LlamaAttention>(config, generator));
  mlp = register_module("mlp", std::make_shared<LlamaMLP>(config, generator));
  input_layernorm = register_module("input_layernorm", norm());
  post_attention_layernorm = register_module("post_attention_layernorm", norm());
}

Tensor LlamaDecoderLayer::forward(const Tensor& x, RotaryEmbedding& rotary) {
  autograd::ModuleScope scope(type_name(), path());
  const Tensor h = x + self_attn->forward(input_layernorm->forward(x), rotary);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

LlamaModel::LlamaModel(const LlamaConfig& config, std::shared_ptr<Generator> generator) {
  embed_tokens = register_module(
      "embed_tokens", std::make_shared<Embedding>(
                          EmbeddingOptions(config.vocab_size(), config.hidden_size()), generator));
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (std::int64_t i = 0; i < config.num_hidden_layers(); ++i)
    layers->push_back(std::make_shared<LlamaDecoderLayer>(config, generator));
  norm = register_module(
      "norm",
      std::make_shared<RMSNorm>(RMSNormOptions({config.hidden_size()}).eps(config.rms_norm_eps())));
  rotary_emb = register_module(
      "rotary_emb", std::make_shared<RotaryEmbedding>(
                        RotaryEmbeddingOptions(config.head_size(), config.max_position_embeddings())
                            .base(config.rope_theta())
                            .pairs(ops::RotaryPairs::halves)
                            .inv_freq(llama_inv_freq(config))));
}

// ---- the model ----------------------------------------------------------------------------------

LlamaForCausalLM::LlamaForCausalLM(LlamaConfig config, std::shared_ptr<Generator> generator)
    : config_(validated(config)),
      generator_(generator ? std::move(generator) : default_generator()) {
  model = register_module("model", std::make_shared<LlamaModel>(config_, generator_));
  if (config_.tie_word_embeddings())
    tied_lm_head = register_module("lm_head", std::make_shared<TiedLinear>(token_embedding()));
  else
    lm_head = register_module(
        "lm_head", linear(config_.hidden_size(), config_.vocab_size(), false, generator_));
  if (init_skipped()) return;
  // transformers' _init_weights: N(0, initializer_range) for every Linear and the token table,
  // biases 0 (the norms are ones already), in the order of the modules.
  autograd::NoGradGuard no_grad;
  for (auto& [name, module] : named_modules()) {
    if (auto* lin = dynamic_cast<Linear*>(module)) {
      normal_(lin->weight.mutable_data(), 0.0, config_.initializer_range(), generator_.get());
      if (lin->bias.defined()) lin->bias.mutable_data().fill(0.0f);
    } else if (auto* emb = dynamic_cast<Embedding*>(module)) {
      normal_(emb->weight.mutable_data(), 0.0, config_.initializer_range(), generator_.get());
    }
  }
}

IndexArray LlamaForCausalLM::generate(const IndexArray& idx, const GenerateOptions& options,
                                      Generator& gen) {
  return tapegrad::nn::transformer::generate(*this, idx, options, gen);
}

Tensor LlamaForCausalLM::embed(const IndexArray& idx) {
  check<ShapeError>(idx.dimension() == 2 && idx.shape()[1] >= 1, context(),
                    ": expected idx of shape (B, T) with T >= 1, got ", idx.shape());
  const std::size_t T = idx.shape()[1], P = std::size_t(config_.max_position_embeddings());
  check<ShapeError>(T <= P, context(), ": expected idx (B, T) with T <= max_position_embeddings ",
                    P, ", got ", idx.shape());
  return model->embed_tokens->forward(idx);  // its IndexError names the id out of range
}

Tensor LlamaForCausalLM::features(const IndexArray& idx) {
  autograd::ModuleScope scope(type_name(), path());
  Tensor x = embed(idx);
  for (const auto& layer : *model->layers) {
    if (!recompute_) {
      x = static_cast<LlamaDecoderLayer&>(*layer).forward(x, *model->rotary_emb);
      continue;
    }
    // The layer's activations are not kept: backward runs it again (autograd/checkpoint.hpp).
    x = autograd::checkpoint(
        [layer, rotary = model->rotary_emb](const std::vector<Tensor>& in) {
          return static_cast<LlamaDecoderLayer&>(*layer).forward(in[0], *rotary);
        },
        {x});
  }
  return model->norm->forward(x);
}

Tensor LlamaForCausalLM::head(const Tensor& x) {
  return tied_lm_head ? tied_lm_head->forward(x) : lm_head->forward(x);
}

Tensor LlamaForCausalLM::forward(const IndexArray& idx) { return head(features(idx)); }

Tensor LlamaForCausalLM::loss(const IndexArray& idx, const IndexArray& targets,
                              std::int64_t ignore_index) {
  check<ShapeError>(targets.shape() == idx.shape(), context(),
                    ": expected targets of the shape of idx ", idx.shape(), ", got ",
                    targets.shape());
  // forward(idx)'s logits, computed as the (B T, vocab_size) rows the loss takes: the head on the
  // flattened features, so the largest tensor of the step is never copied to be reshaped.
  const Tensor logits = head(ops::reshape(features(idx), {-1, config_.hidden_size()}));
  IndexArray flat = targets;
  flat.reshape({targets.size()});
  return ops::cross_entropy(logits, flat, ops::CrossEntropyOptions().ignore_index(ignore_index));
}

ParameterGroups LlamaForCausalLM::parameter_groups() const { return nn::parameter_groups(*this); }

std::int64_t LlamaForCausalLM::num_params() const {
  std::int64_t n = 0;
  for (const Parameter& p : parameters()) n += static_cast<std::int64_t>(p.numel());
  return n;
}

}  // namespace tapegrad::nn::transformer
