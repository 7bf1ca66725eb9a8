// include/tapegrad/ops/causal_attention.hpp
//
// Causal multi-head self-attention as one op, the attention of a decoder-only Transformer (GPT):
// it takes the output of ONE fused projection, qkv = x W_attn^T + b_attn of shape (B, T, 3C),
// and returns the heads' outputs side by side, (B, T, C). What nanoGPT writes as
//
//     q, k, v = qkv.split(C, dim=2)                                  # each (B, T, C)
//     q = q.view(B, T, nh, hs).transpose(1, 2)                       # (B, nh, T, hs); k, v alike
//     y = F.scaled_dot_product_attention(q, k, v, is_causal=True)    # or, written out:
//         att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
//         att = att.masked_fill(tril(T, T) == 0, -inf).softmax(-1)   # then dropout(att)
//         y = att @ v
//     y = y.transpose(1, 2).contiguous().view(B, T, C)
//
// Here the split, the views and both transposes cost nothing: head h of the queries of batch b is
// the (T, hs) block at column h * hs of qkv's rows b * T .., the keys at column C + h * hs, the
// values at 2C + h * hs, read in place. The causal mask is a loop bound (position i attends to
// j <= i), never a (T, T) array.
#pragma once

#include <cstdint>
#include <optional>

#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/random.hpp"
#include "tapegrad/tensor.hpp"

namespace tapegrad {

class CausalAttentionOptions {
 public:
  /// Dropout probability on the attention weights, in [0, 1] (default 0: none).
  CausalAttentionOptions& dropout(double v) {
    dropout_ = v;
    return *this;
  }
  double dropout() const { return dropout_; }
  /// Whether dropout is active: a module passes is_training() (default true).
  CausalAttentionOptions& training(bool v) {
    training_ = v;
    return *this;
  }
  bool training() const { return training_; }
  /// The dropout mask's stream (ops/dropout.hpp): the weights (B, nh, T, T) get the mask that
  /// ops::dropout(att, p, true, stream) would apply to nanoGPT's att. A module passes its
  /// Dropout's next_stream(). Without one, a call that drops takes the stream {seed, 0} with seed
  /// drawn from generator() (null: the default generator), as ops::dropout with a generator.
  CausalAttentionOptions& dropout_stream(std::optional<ops::DropoutStream> v) {
    stream_ = v;
    return *this;
  }
  const std::optional<ops::DropoutStream>& dropout_stream() const { return stream_; }
  CausalAttentionOptions& generator(Generator* v) {
    generator_ = v;
    return *this;
  }
  Generator* generator() const { return generator_; }

 private:
  double dropout_ = 0.0;
  bool training_ = true;
  std::optional<ops::DropoutStream> stream_;
  Generator* generator_ = nullptr;
};

namespace ops {

/// qkv (B, T, 3C), queries, keys and values side by side, each with n_head heads of hs = C / n_head
/// columns -> (B, T, C). Scores are (q k^T) * float(1 / sqrt(hs)); position i attends to j <= i.
/// attn_out, when given, receives the weights applied to the values, (B, n_head, T, T): the
/// softmax (after dropout), zeros above the diagonal. Throws ShapeError when qkv is not (B, T, 3C)
/// or C is not a multiple of n_head, ValueError for n_head < 1 or a bad dropout probability.
Tensor causal_self_attention(const Tensor& qkv, std::int64_t n_head,
                             const CausalAttentionOptions& options = {}, Array* attn_out = nullptr);

}  // namespace ops
}  // namespace tapegrad
