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
//
// An optional additive bias on the scores, (n_head, T, T), is added after the scale and before the
// mask and the softmax, as PyTorch's F.scaled_dot_product_attention adds a float attn_mask:
//
//         att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs)) + bias    # bias (nh, T, T)
//
// ALiBi's per-head slopes times the distance i - j are such a bias; -inf masks a key. The bias is
// a constant: no gradient flows into it (it is an Array, not a Tensor), and backward is the same
// with or without it, since it needs only the softmax.
//
// Grouped-query attention (Ainslie et al., "GQA", 2023; Llama 2 70B, Llama 3, SmolLM2) shares each
// key/value head between n_head / n_kv_head query heads: option n_kv_head, with qkv packed as
// (B, T, (n_head + 2 n_kv_head) hs), the n_head query heads, then the n_kv_head key heads, then the
// n_kv_head value heads. Query head h reads key/value head h / (n_head / n_kv_head), in place:
// what transformers' repeat_kv does by copying,
//
//     k = k[:, :, None].expand(B, n_kv_head, n_head // n_kv_head, T, hs).reshape(B, n_head, T, hs)
//
// costs nothing here. The output is (B, T, n_head hs). n_kv_head = 1 is multi-query attention.
#pragma once

#include <cstdint>
#include <optional>

#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

/// The causal attention's options. Its weights (B, nh, T, T) are dropped with the mask that
/// ops::dropout(att, p, true, stream) would apply to nanoGPT's att, where stream is dropout_stream
/// (a module passes its Dropout's next_stream()); without one, a call that drops takes the stream
/// {seed, 0} with seed drawn from generator, as ops::dropout with a generator.
class CausalAttentionOptions {
 public:
  /// Dropout probability on the attention weights, in [0, 1]; default 0 (none).
  TAPEGRAD_ARG(double, dropout) = 0.0;
  /// Whether dropout is active (a module passes is_training()); default true.
  TAPEGRAD_ARG(bool, training) = true;
  /// The dropout mask's stream (ops/dropout.hpp); default none.
  TAPEGRAD_ARG(std::optional<ops::DropoutStream>, dropout_stream) = std::nullopt;
  /// Where a call without a stream draws its seed; default null, the default generator.
  TAPEGRAD_ARG(Generator*, generator) = nullptr;
  /// Added to every batch's scaled scores before the mask and the softmax, (n_head, T, T); row i
  /// of head h is the bias of query i against keys 0 .. T-1 (the entries above the diagonal are
  /// never read). Default none.
  TAPEGRAD_ARG(std::optional<Array>, bias) = std::nullopt;
  /// Key/value heads (>= 1, dividing n_head) for grouped-query attention: qkv is then (B, T,
  /// (n_head + 2 n_kv_head) hs) and query head h reads key/value head h / (n_head / n_kv_head).
  /// Unset (default): n_head, qkv in three equal parts.
  TAPEGRAD_ARG(std::optional<std::int64_t>, n_kv_head) = std::nullopt;
};

namespace ops {

/// qkv (B, T, 3C), queries, keys and values side by side, each with n_head heads of hs = C / n_head
/// columns -> (B, T, C). Scores are (q k^T) * float(1 / sqrt(hs)) (+ bias); position i attends to
/// j <= i. With options.n_kv_head() = K: qkv (B, T, (n_head + 2K) hs) -> (B, T, n_head hs).
/// attn_out, when given, receives the weights applied to the values, (B, n_head, T, T): the
/// softmax (after dropout), zeros above the diagonal. Throws ShapeError when qkv is not (B, T, 3C)
/// or C is not a multiple of n_head (with n_kv_head: qkv's width not a multiple of n_head + 2K),
/// or the bias is not (n_head, T, T); ValueError for n_head < 1, an n_kv_head < 1 or not dividing
/// n_head, or a bad dropout probability.
Tensor causal_self_attention(const Tensor& qkv, std::int64_t n_head,
                             const CausalAttentionOptions& options = {}, Array* attn_out = nullptr);

}  // namespace ops
}  // namespace tapegrad
