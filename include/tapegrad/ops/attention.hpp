// include/tapegrad/ops/attention.hpp
//
// Scaled dot-product attention (The Annotated Transformer's attention(), "Attention Is All You
// Need" section 3.2) as one fused op, and the masks it takes:
//
//     scores = Q K^T / sqrt(d_k);  scores[mask == false] = -1e9;  P = softmax(scores);  out = dropout(P) V
//
// Heads are PACKED in the last dimension: q (B, Tq, h * d_k) holds head i in columns
// [i * d_k, (i + 1) * d_k), exactly the layout a Linear(d_model, d_model) produces, so the
// tutorial's view(B, -1, h, d_k).transpose(1, 2) and its inverse cost no copy here. With h = 1 it
// is the tutorial's attention() on (B, T, d_k). Masks follow the tutorial: TRUE means "may attend"
// (the opposite of masked_fill's mask, whose true means "fill").
#pragma once

#include <cstdint>
#include <optional>

#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

/// The attention's options. Its weights (B, h, Tq, Tk) are dropped with the mask that
/// ops::dropout(p_attn, p, true, stream) would apply to the tutorial's p_attn, where stream is
/// dropout_stream (a module passes its Dropout's next_stream()); without one, a call that drops
/// takes the stream {seed, 0} with seed drawn from generator, as ops::dropout with a generator.
class AttentionOptions {
 public:
  /// Heads h packed in the last dimension of q, k and v, >= 1 and dividing both widths; default 1.
  TAPEGRAD_ARG(std::int64_t, heads) = 1;
  /// Dropout probability on the attention weights, in [0, 1]; default 0.
  TAPEGRAD_ARG(double, dropout) = 0.0;
  /// Whether dropout is active (a module passes is_training()); default true.
  TAPEGRAD_ARG(bool, training) = true;
  /// The dropout mask's stream (ops/dropout.hpp); default none.
  TAPEGRAD_ARG(std::optional<ops::DropoutStream>, dropout_stream) = std::nullopt;
  /// Where a call without a stream draws its seed; default null, the default generator.
  TAPEGRAD_ARG(Generator*, generator) = nullptr;
};

namespace ops {

/// query (B, Tq, h*d_k), key (B, Tk, h*d_k), value (B, Tk, h*d_v) -> (B, Tq, h*d_v).
/// mask: true where a query may attend to a key, broadcastable to (B, Tq, Tk) and shared by all
/// heads (the tutorial's src_mask (B, 1, Tk) or tgt_mask (B, Tq, Tq)); a masked score becomes
/// -1e9 before the softmax, so a fully masked row attends uniformly, as in the tutorial.
/// attn_out, when given, receives the weights actually applied to value, (B, h, Tq, Tk): the
/// softmax after dropout (the tutorial's self.attn). Throws ShapeError for shapes that do not fit
/// (naming them), ValueError for heads < 1 or a bad dropout probability.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Mask>& mask = std::nullopt,
                                    const AttentionOptions& options = {},
                                    Array* attn_out = nullptr);

/// The decoder's causal mask, (1, size, size): true at [0, i, j] iff j <= i (position i may
/// attend to itself and to earlier positions). size < 0 is a ValueError.
Mask subsequent_mask(std::int64_t size);

/// The tutorial's source mask, (src != pad).unsqueeze(-2): ids (B, T) -> (B, 1, T), true where
/// the id is not padding. ids must be 2-D (ShapeError).
Mask padding_mask(const IndexArray& ids, std::int64_t pad);

/// The tutorial's Batch.make_std_mask: padding_mask(tgt, pad) & subsequent_mask(T), (B, T, T):
/// a target position may attend to earlier, non-padding positions.
Mask target_mask(const IndexArray& tgt, std::int64_t pad);

}  // namespace ops
}  // namespace tapegrad
