// src/transformer/attention.cpp: MultiHeadedAttention — three projections, the fused attention op, the
// output projection. Each step names the tutorial line it replaces.
#include "tapegrad/transformer/attention.hpp"

#include <algorithm>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn::transformer {

MultiHeadedAttention::MultiHeadedAttention(std::int64_t h, std::int64_t d_model, double dropout_p,
                                           std::shared_ptr<Generator> generator)
    : h_(h), d_model_(d_model), generator_(generator ? std::move(generator) : default_generator()) {
  check<ValueError>(h >= 1 && d_model >= 0 && d_model % std::max<std::int64_t>(h, 1) == 0,
                    "MultiHeadedAttention: expected heads h >= 1 dividing d_model, got h = ", h,
                    " and d_model = ", d_model);
  linears = register_module("linears", std::make_shared<ModuleList>());
  for (int i = 0; i < 4; ++i)
    linears->push_back(std::make_shared<Linear>(LinearOptions(d_model, d_model), generator_));
  dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p, generator_));
}

Tensor MultiHeadedAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const std::optional<Mask>& mask) {
  autograd::ModuleScope scope(type_name(), path());
  // 1) the linear projections, d_model => h x d_k (the split into heads is free: see the header)
  Tensor q = linears->ptr<Linear>(0)->forward(query);
  Tensor k = linears->ptr<Linear>(1)->forward(key);
  Tensor v = linears->ptr<Linear>(2)->forward(value);
  // 2) attention on all heads at once, the same mask for every head; the dropout of the weights
  //    takes its mask's stream from the "dropout" child, whose p and training mode it uses
  const double p = dropout->options().p();
  const bool drops = dropout->is_training() && p > 0.0;
  AttentionOptions options =
      AttentionOptions().heads(h_).dropout(p).training(dropout->is_training());
  if (drops && q.shape()[0] * q.shape()[1] * k.shape()[1] > 0)
    options.dropout_stream(dropout->next_stream());
  Tensor x = ops::scaled_dot_product_attention(q, k, v, mask, options, &attn);
  // 3) the heads are already concatenated in the last dimension: the final linear
  return linears->ptr<Linear>(3)->forward(x);
}

std::shared_ptr<MultiHeadedAttention> MultiHeadedAttention::clone() const {
  auto copy =
      std::make_shared<MultiHeadedAttention>(h_, d_model_, dropout->options().p(), generator_);
  copy->load_state_dict(state_dict());
  copy->train(is_training());
  return copy;
}

}  // namespace tapegrad::nn::transformer
