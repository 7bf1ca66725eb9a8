// include/tapegrad/ops/embedding.hpp
//
// The embedding lookup (PyTorch's torch.nn.functional.embedding; docs/semantics.md#embedding): a
// gather of rows in forward, a scatter-add of gradient rows in backward. Positions holding
// padding_idx send no gradient, so the padding row never learns.
#pragma once

#include <cstdint>
#include <optional>

#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/tensor.hpp"

namespace tapegrad {

class EmbeddingFuncOptions {
 public:
  /// Row whose positions receive no gradient (negative counts from the end).
  EmbeddingFuncOptions& padding_idx(std::optional<std::int64_t> v) {
    padding_idx_ = v;
    return *this;
  }
  /// Renormalise each looked-up row whose norm exceeds max_norm, in place, before the lookup.
  EmbeddingFuncOptions& max_norm(std::optional<double> v) {
    max_norm_ = v;
    return *this;
  }
  /// The p of the p-norm used by max_norm.
  EmbeddingFuncOptions& norm_type(double v) {
    norm_type_ = v;
    return *this;
  }
  /// Divide each row's gradient by the number of times its id occurs in the batch.
  EmbeddingFuncOptions& scale_grad_by_freq(bool v) {
    scale_grad_by_freq_ = v;
    return *this;
  }
  /// Produce a row-sparse gradient (the touched rows only).
  EmbeddingFuncOptions& sparse(bool v) {
    sparse_ = v;
    return *this;
  }
  std::optional<std::int64_t> padding_idx() const { return padding_idx_; }
  std::optional<double> max_norm() const { return max_norm_; }
  double norm_type() const { return norm_type_; }
  bool scale_grad_by_freq() const { return scale_grad_by_freq_; }
  bool sparse() const { return sparse_; }

 private:
  std::optional<std::int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2.0;
  bool scale_grad_by_freq_ = false;
  bool sparse_ = false;
};

namespace ops {

/// ids: any shape S, weight: (num, dim) -> S + (dim,), y[s, :] = weight[ids[s], :].
/// An id outside [0, num) is an IndexError naming the id and its position, checked before
/// anything (including the max_norm renorm) is changed. A weight that is not 2-D is a ShapeError;
/// padding_idx outside [-num, num), max_norm <= 0 or NaN, a NaN norm_type, and sparse together with
/// scale_grad_by_freq are ValueErrors. max_norm rescales the referenced rows of weight in place
/// (bumping its version) even when weight does not require grad, as PyTorch does.
Tensor embedding(const IndexArray& ids, const Tensor& weight,
                 const EmbeddingFuncOptions& options = {});

/// embedding(ids, weight) * scale in one pass (the scaled Embeddings of the tutorials, fused).
/// Same result, bit for bit, as ops::mul(ops::embedding(ids, weight, options), scale).
Tensor embedding_scaled(const IndexArray& ids, const Tensor& weight, double scale,
                        const EmbeddingFuncOptions& options = {});

/// dropout(embedding(ids, weight) * scale + rows) in one pass: the tutorials' scaled embedding,
/// the positional table added to it and the dropout after it (InputEmbedding), for ids (B, L) and
/// a table whose first L rows of D floats are added to each of the B rows: y (B, L, D). Backward
/// computes the mask again inside the scatter into weight's gradient. The same values and
/// gradients, bit for bit, as ops::add_rows_dropout(ops::embedding_scaled(ids, weight, scale,
/// options), rows, p, training, stream); one tape entry, "embedding_add_rows_dropout". Errors as
/// embedding's, plus ShapeError for ids not (B, L) or a table that does not fit.
Tensor embedding_add_rows_dropout(const IndexArray& ids, const Tensor& weight, double scale,
                                  const Array& rows, double p, bool training, DropoutStream stream,
                                  const EmbeddingFuncOptions& options = {});

}  // namespace ops
}  // namespace tapegrad
