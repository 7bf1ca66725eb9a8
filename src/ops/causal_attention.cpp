// src/ops/causal_attention.cpp
//
// Causal self-attention on a fused qkv (B, T, 3C) as one op (causal_attention.hpp). Composed from
// single ops it would record a split, three view/transposes (copies here), two matmuls, a scale,
// a masked_fill, a softmax and the inverse transpose; fused, the heads are read and written in
// place, and the scale, the causal mask and the softmax are one pass over each row of scores.
// The maths is in the kernels: causal_attention_reference.cpp (read it first) and
// causal_attention_fast.cpp, picked for the CPU by kernels::causal_attention_kernels()
// (docs/kernels.md). This file checks, draws the dropout mask and records the backward.
// Saved for backward: qkv (as a tensor, version-checked), the softmax P (B, nh, T, T) and, with
// dropout, the keep mask and the weights actually applied.
#include "tapegrad/ops/causal_attention.hpp"

#include <cmath>
#include <memory>
#include <vector>

#include "causal_attention_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/dropout.hpp"

namespace tapegrad::ops {

namespace {
struct Dims {
  std::size_t B, T, H, hs;
};

// What forward leaves for backward.
struct Saved {
  Array p;             // (B, H, T, T): the softmax, zeros above the diagonal
  float scale = 1.0f;  // float(1 / sqrt(hs)), as nanoGPT's Python float
  // Dropout on the weights (empty keep: none).
  std::vector<std::uint8_t> keep;  // (B, H, T, T) keep mask
  Array p_used;                    // p * keep / (1 - p_drop): the weights applied to V
  float drop_scale = 1.0f;
  const std::uint8_t* keep_or_null() const { return keep.empty() ? nullptr : keep.data(); }
  float* p_used_or_null() { return keep.empty() ? nullptr : p_used.data(); }
};

// The dropout part, kept apart: the keep mask of the stream, element order (b, h, i, j).
void make_keep_mask(Saved& s, double p_drop, DropoutStream stream) {
  const xt::xarray<std::uint8_t> keep = dropout_mask(s.p.shape(), p_drop, stream);
  s.keep.assign(keep.begin(), keep.end());
  s.drop_scale =
      p_drop < 1.0 ? 1.0f / static_cast<float>(1.0 - p_drop) : 0.0f;  // p = 1 keeps nothing
  s.p_used = Array::from_shape(s.p.shape());
}
}  // namespace

Tensor causal_self_attention(const Tensor& qkv, std::int64_t n_head,
                             const CausalAttentionOptions& options, Array* attn_out) {
  const std::string where = autograd::where("causal_self_attention");
  const Shape& sq = qkv.shape();
  check<ShapeError>(
      sq.size() == 3 && sq[2] % 3 == 0, where,
      ": expected qkv of shape (B, T, 3C), queries, keys and values side by side, got ", sq);
  check<ValueError>(n_head >= 1, where, ": expected n_head >= 1, got ", n_head);
  const std::size_t C = sq[2] / 3, H = static_cast<std::size_t>(n_head);
  check<ShapeError>(C % H == 0, where, ": expected the width C = ", C, " of qkv ", sq,
                    " to be a multiple of n_head = ", n_head);
  check_dropout_probability(options.dropout());
  const Dims d{sq[0], sq[1], H, C / H};

  auto s = std::make_shared<Saved>();
  s->scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.hs)));
  s->p = Array::from_shape({d.B, d.H, d.T, d.T});
  const double p_drop = options.dropout();
  if (options.training() && p_drop > 0.0 && s->p.size() > 0) {
    const DropoutStream stream =
        options.dropout_stream()
            ? *options.dropout_stream()
            : DropoutStream{
                  (options.generator() ? *options.generator() : *default_generator()).next_u64(),
                  0};
    make_keep_mask(*s, p_drop, stream);
  }
  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::CausalAttentionKernels* kernel = &kernels::causal_attention_kernels();
  Array out = Array::from_shape({d.B, d.T, C});
  kernel->forward(qkv.data().data(), out.data(), s->p.data(), s->keep_or_null(), s->drop_scale,
                  s->p_used_or_null(), d.B, d.T, d.H, d.hs, s->scale);
  if (attn_out) *attn_out = s->keep.empty() ? s->p : s->p_used;
  Tensor y(std::move(out));

  autograd::record("causal_self_attention", y, {qkv}, {qkv}, [qkv, s, d, kernel](Array dy) {
    Array dqkv = Array::from_shape(qkv.shape());  // the kernel writes every element
    kernel->backward(dy.data(), qkv.data().data(), s->p.data(), s->keep_or_null(), s->drop_scale,
                     s->p_used_or_null(), dqkv.data(), d.B, d.T, d.H, d.hs, s->scale);
    qkv.accumulate_grad(std::move(dqkv), "causal_self_attention");
  });
  return y;
}

}  // namespace tapegrad::ops
