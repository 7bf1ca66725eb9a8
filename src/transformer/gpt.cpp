// src/transformer/gpt.cpp: the GPT's config checks, its modules, its forward pass and optimizer
// groups. Its initialisation is init_gpt_weights (gpt_init.cpp); its cached forward for the
// sampler is in gpt_generate.cpp, the sampler itself in generate.cpp.
//
// The forward pass, shapes for idx (B, T) and C = n_embd:
//   x = drop(wte(idx) + wpe(pos))                      (B, T, C)   pos = 0 .. T-1 for every row
//     (sinusoidal: x = PositionalEncoding(wte.lut(idx) * sqrt(C)), the seeds' two layers;
//      rope: x = drop(wte(idx)), the positions enter each attention instead; none: the same,
//      and the attention alone knows the order)
//   x = x + c_proj(causal_self_attention(rotary(c_attn(ln_1(x)))))     per block (rotary: rope)
//   x = x + dropout(c_proj(gelu(c_fc(ln_2(x)))))                        (swiglu: w2(silu(w1) * w3); relu_squared: relu(.)^2)
//   logits = ln_f(x) wte^T                              (B, T, vocab)
// ln_* is a LayerNorm or an RMSNorm, the attention and the MLP the built-in ones, unless the
// config's factories build others. Each line is one or two tape entries: the attention, the
// norms, GELU, the rotation, the linears and the loss are fused ops, so a step of the baby GPT
// records about 60 entries.
#include "tapegrad/transformer/gpt.hpp"

#include <algorithm>
#include <cmath>

#include "tapegrad/autograd/checkpoint.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/transformer/gpt_init.hpp"
#include "tapegrad/transformer/gpt_parts.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/ops/causal_attention.hpp"
#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/ops/loss.hpp"
#include "tapegrad/ops/shape.hpp"

namespace tapegrad::nn::transformer {

void validate(const GPTConfig& c) {
  auto positive = [](const char* name, std::int64_t v) {
    check<ValueError>(v >= 1, "GPT: expected ", name, " >= 1, got ", v);
  };
  positive("vocab_size", c.vocab_size());
  positive("block_size", c.block_size());
  positive("n_layer", c.n_layer());
  positive("n_head", c.n_head());
  positive("n_embd", c.n_embd());
  check<ValueError>(c.n_embd() % c.n_head() == 0,
                    "GPT: expected n_embd to be a multiple of n_head, got n_embd = ", c.n_embd(),
                    " and n_head = ", c.n_head());
  check<ValueError>(c.norm_eps() > 0 && c.norm_eps() < 1, "GPT: expected norm_eps in (0, 1), got ",
                    c.norm_eps());
  ops::check_dropout_probability(c.dropout());
  check<ValueError>(c.position() == "learned" || c.position() == "sinusoidal" ||
                        c.position() == "rope" || c.position() == "none",
                    "GPT: expected position \"learned\", \"sinusoidal\", \"rope\" or \"none\", got \"",
                    c.position(), "\"");
  check<ValueError>(c.position() != "rope" || (c.n_embd() / c.n_head()) % 2 == 0,
                    "GPT: expected an even head size n_embd / n_head with position \"rope\" (its "
                    "columns turn in pairs), got ",
                    c.n_embd(), " / ", c.n_head(), " = ", c.n_embd() / c.n_head());
  // The named parts must be registered (a factory given in the config stands in for its name).
  if (!c.make_attention()) registered_attention(c.attention(), "GPT");
  if (!c.make_norm()) registered_norm(c.norm(), "GPT");
  if (!c.make_mlp()) registered_mlp(c.mlp(), "GPT");
  check<ValueError>(c.gelu() == "none" || c.gelu() == "tanh",
                    "approximate argument must be either none or tanh. | GPT: expected gelu "
                    "\"none\" or \"tanh\", got \"",
                    c.gelu(), "\"");
  check<ValueError>(c.mlp() == "gelu" || c.gelu() == "none",
                    "GPT: expected gelu \"none\" with mlp \"", c.mlp(),
                    "\" (gelu chooses the GELU of mlp \"gelu\"), got gelu \"", c.gelu(), "\"");
}

namespace {
const GPTConfig& validated(const GPTConfig& c) {
  validate(c);
  return c;
}

LinearOptions linear(std::int64_t in, std::int64_t out) { return LinearOptions(in, out); }

}  // namespace

// ---- the blocks ----------------------------------------------------------------------------------

Tensor BlockAttention::forward_cached(const Tensor&) {
  fail<ValueError>(context(), ".forward_cached: this attention keeps no cache (supports_cache() is "
                   "false); sample with GenerateOptions().use_cache(false)");
}

AttentionFactory attention_factory(const GPTConfig& config) {
  if (config.make_attention()) return config.make_attention();
  return registered_attention(config.attention(), "GPT");
}

ModuleFactory mlp_factory(const GPTConfig& config) {
  if (config.make_mlp()) return config.make_mlp();
  return registered_mlp(config.mlp(), "GPT");
}

ModuleFactory norm_factory(const GPTConfig& config) {
  if (config.make_norm()) return config.make_norm();
  return registered_norm(config.norm(), "GPT");
}

namespace {
// What a factory built, refused when null: the module would be registered as nothing.
template <class M>
std::shared_ptr<M> built(std::shared_ptr<M> module, const char* factory) {
  check<ValueError>(module != nullptr, "GPT: the factory ", factory, " returned null");
  return module;
}
}  // namespace

CausalSelfAttention::CausalSelfAttention(const GPTConfig& config,
                                         std::shared_ptr<Generator> generator)
    : c_attn(register_module(
          "c_attn",
          std::make_shared<Linear>(linear(config.n_embd(), 3 * config.n_embd()), generator))),
      rotary(config.position() != "rope"
                 ? nullptr
                 : register_module("rotary",
                                   std::make_shared<RotaryEmbedding>(RotaryEmbeddingOptions(
                                       config.n_embd() / config.n_head(), config.block_size())))),
      c_proj(register_module(
          "c_proj", std::make_shared<Linear>(linear(config.n_embd(), config.n_embd()), generator))),
      attn_dropout(
          register_module("attn_dropout", std::make_shared<Dropout>(config.dropout(), generator))),
      resid_dropout(
          register_module("resid_dropout", std::make_shared<Dropout>(config.dropout(), generator))),
      n_head(config.n_head()),
      block_size_(std::size_t(config.block_size())) {}

Tensor CausalSelfAttention::forward(const Tensor& x, Array* attention) {
  autograd::ModuleScope scope(type_name(), path());
  Tensor qkv = c_attn->forward(x);             // (B, T, 3C): q | k | v
  if (rotary) qkv = rotary->forward_qkv(qkv);  // q and k turned by their positions 0 .. T-1
  const double p = attn_dropout->options().p();
  auto options = CausalAttentionOptions().dropout(p).training(attn_dropout->is_training());
  if (attn_dropout->is_training() && p > 0.0 && qkv.numel() > 0)
    options.dropout_stream(attn_dropout->next_stream());
  const Tensor y = ops::causal_self_attention(qkv, n_head, options, attention);  // (B, T, C)
  return resid_dropout->forward(c_proj->forward(y));
}

MLP::MLP(const GPTConfig& config, std::shared_ptr<Generator> generator) {
  const std::int64_t C = config.n_embd();
  if (config.mlp() == "gelu" || config.mlp() == "relu_squared") {
    c_fc = register_module("c_fc", std::make_shared<Linear>(linear(C, 4 * C), generator));
    if (config.mlp() == "gelu")
      gelu = register_module("gelu", std::make_shared<GELU>(config.gelu()));
    else
      relu_squared = register_module("relu_squared", std::make_shared<ReLUSquared>());
    c_proj = register_module("c_proj", std::make_shared<Linear>(linear(4 * C, C), generator));
  } else {  // LLaMA's width, 2/3 of 4C: three matrices of C x 8C/3 hold what two of C x 4C do
    const std::int64_t hidden = std::max<std::int64_t>(1, 2 * (4 * C) / 3);
    swiglu = register_module(
        "swiglu", std::make_shared<SwiGLU>(SwiGLUOptions(C, hidden).bias(true), generator));
  }
  dropout = register_module("dropout", std::make_shared<Dropout>(config.dropout(), generator));
}

Tensor MLP::forward(const Tensor& x) {
  autograd::ModuleScope scope(type_name(), path());
  if (swiglu) return dropout->forward(swiglu->forward(x));
  const Tensor h = c_fc->forward(x);
  return dropout->forward(c_proj->forward(gelu ? gelu->forward(h) : relu_squared->forward(h)));
}

// The pieces in nanoGPT's order of registration (ln_1, attn, ln_2, mlp).
Block::Block(const GPTConfig& config, std::shared_ptr<Generator> generator) {
  const ModuleFactory make_norm = norm_factory(config);
  ln_1 = register_module("ln_1", built(make_norm(config, generator), "make_norm"));
  attn = register_module("attn",
                         built(attention_factory(config)(config, generator), "make_attention"));
  ln_2 = register_module("ln_2", built(make_norm(config, generator), "make_norm"));
  mlp = register_module("mlp", built(mlp_factory(config)(config, generator), "make_mlp"));
}

Tensor Block::forward(const Tensor& x, Array* attention) {
  autograd::ModuleScope scope(type_name(), path());
  const Tensor h = x + attn->forward(ln_1->forward(x), attention);
  return h + mlp->forward(ln_2->forward(h));
}

GPTTransformer::GPTTransformer(const GPTConfig& config, std::shared_ptr<Generator> generator) {
  const std::int64_t V = config.vocab_size(), C = config.n_embd();
  if (config.position() == "sinusoidal") {
    wte_scaled =
        register_module("wte", std::make_shared<Embeddings>(EmbeddingOptions(V, C), generator));
    wpe_table = register_module(
        "wpe", std::make_shared<PositionalEncoding>(
                   PositionalEncodingOptions(C, config.dropout()).max_len(config.block_size()),
                   generator));
  } else {  // "learned", "rope" and "none": a token table, for "learned" a position table, dropout
    wte = register_module("wte", std::make_shared<Embedding>(EmbeddingOptions(V, C), generator));
    if (config.position() == "learned")
      wpe = register_module(
          "wpe", std::make_shared<Embedding>(EmbeddingOptions(config.block_size(), C), generator));
    drop = register_module("drop", std::make_shared<Dropout>(config.dropout(), generator));
  }
  h = register_module("h", std::make_shared<ModuleList>());
  for (std::int64_t i = 0; i < config.n_layer(); ++i)
    h->push_back(std::make_shared<Block>(config, generator));
  ln_f = register_module("ln_f", built(norm_factory(config)(config, generator), "make_norm"));
}

// ---- the model -----------------------------------------------------------------------------------

GPT::GPT(GPTConfig config, std::shared_ptr<Generator> generator)
    : config_(validated(config)),
      generator_(generator ? std::move(generator) : default_generator()) {
  transformer =
      register_module("transformer", std::make_shared<GPTTransformer>(config_, generator_));
  lm_head = register_module("lm_head",
                            std::make_shared<TiedLinear>(token_embedding()));  // the same table
  if (!init_skipped()) init_gpt_weights(*this, config_.n_layer(), *generator_);
}

Parameter GPT::token_embedding() const {
  return transformer->wte ? transformer->wte->weight : transformer->wte_scaled->lut->weight;
}

IndexArray GPT::generate(const IndexArray& idx, const GenerateOptions& options, Generator& gen) {
  return tapegrad::nn::transformer::generate(*this, idx, options, gen);
}

Tensor GPT::embed(const IndexArray& idx) {
  check<ShapeError>(idx.dimension() == 2, context(), ": expected idx of shape (B, T), got ",
                    idx.shape());
  const std::size_t B = idx.shape()[0], T = idx.shape()[1];
  check<ShapeError>(
      T <= static_cast<std::size_t>(config_.block_size()), "Cannot forward sequence of length ", T,
      ", block size is only ", config_.block_size(), " | ", context(),
      ": expected idx (B, T) with T <= ", config_.block_size(), ", got ", idx.shape());
  if (transformer->wte_scaled)  // the seeds' layers: lut(idx) * sqrt(C), then + pe[:T] and dropout
    return transformer->wpe_table->forward(transformer->wte_scaled->forward(idx));
  if (!transformer->wpe)  // rope and none: the positions enter each attention, if at all
    return transformer->drop->forward(transformer->wte->forward(idx));
  IndexArray pos =
      IndexArray::from_shape({B, T});  // 0 .. T-1 in every row: a plain add, no broadcast
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) pos(b, t) = static_cast<std::int64_t>(t);
  return transformer->drop->forward(transformer->wte->forward(idx) +
                                    transformer->wpe->forward(pos));
}

Tensor GPT::features(const IndexArray& idx, std::vector<Array>* attention) {
  autograd::ModuleScope scope(type_name(), path());
  Tensor x = embed(idx);
  if (attention) attention->clear();
  for (const auto& block : *transformer->h) {
    if (recompute_ && attention == nullptr) {
      // The Block's activations are not kept: backward runs it again (autograd/checkpoint.hpp).
      x = autograd::checkpoint(
          [block](const std::vector<Tensor>& in) {
            return static_cast<Block&>(*block).forward(in[0]);
          },
          {x});
      continue;
    }
    Array weights;
    x = static_cast<Block&>(*block).forward(x, attention ? &weights : nullptr);
    if (attention) attention->push_back(std::move(weights));
  }
  return transformer->ln_f->forward(x);
}

Tensor GPT::forward(const IndexArray& idx) { return lm_head->forward(features(idx)); }

Tensor GPT::loss(const IndexArray& idx, const IndexArray& targets, std::int64_t ignore_index) {
  check<ShapeError>(targets.shape() == idx.shape(), context(),
                    ": expected targets of the shape of idx ", idx.shape(), ", got ",
                    targets.shape());
  // forward(idx)'s logits, computed as the (B T, vocab_size) rows the loss takes: the head on the
  // flattened features, so the largest tensor of the step is never copied to be reshaped.
  const Tensor logits = lm_head->forward(ops::reshape(features(idx), {-1, config_.n_embd()}));
  IndexArray flat = targets;
  flat.reshape({targets.size()});
  return ops::cross_entropy(logits, flat, ops::CrossEntropyOptions().ignore_index(ignore_index));
}

ParameterGroups GPT::parameter_groups() const { return nn::parameter_groups(*this); }

std::int64_t GPT::num_params(bool non_embedding) const {
  std::int64_t n = 0;
  for (const Parameter& p : parameters()) n += static_cast<std::int64_t>(p.numel());
  if (non_embedding && transformer->wpe)
    n -= static_cast<std::int64_t>(transformer->wpe->weight.numel());
  return n;
}

double GPT::flops_per_token() const {
  const double L = double(config_.n_layer()), H = double(config_.n_head());
  const double Q = double(config_.n_embd() / config_.n_head()), T = double(config_.block_size());
  return 6.0 * double(num_params()) + 12.0 * L * H * Q * T;
}

}  // namespace tapegrad::nn::transformer
