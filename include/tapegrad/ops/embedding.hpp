// include/tapegrad/ops/embedding.hpp
//
// The embedding lookup (PyTorch's torch.nn.functional.embedding; docs/semantics.md#embedding): a
// gather of rows in forward, a scatter-add of gradient rows in backward. Positions holding
// padding_idx send no gradient, so the padding row never learns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tapegrad/ops/dropout.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

/// The options of an embedding lookup, one type for nn::Embedding and ops::embedding (PyTorch's
/// nn.Embedding and F.embedding arguments, which are the same five plus the module's four). The op
/// reads the table's shape from its weight and ignores num_embeddings, embedding_dim, _weight and
/// _freeze; ops::check_embedding_options checks the five, for both.
///
///     ops::embedding(ids, weight, EmbeddingOptions().padding_idx(0));
///     nn::Embedding lut(EmbeddingOptions(10, 3).padding_idx(0).sparse(true));
class EmbeddingOptions {
 public:
  EmbeddingOptions() = default;
  EmbeddingOptions(std::int64_t num_embeddings, std::int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}

  /// Rows of the table, >= 0 (the module's; default 0).
  TAPEGRAD_ARG(std::int64_t, num_embeddings) = 0;
  /// Width of each row, >= 0 (the module's; default 0).
  TAPEGRAD_ARG(std::int64_t, embedding_dim) = 0;
  /// Row that never receives gradient (<pad>), in [-num, num), negative from the end; default none.
  TAPEGRAD_ARG(std::optional<std::int64_t>, padding_idx) = std::nullopt;
  /// Rescale, in place, each looked-up row whose norm exceeds it, before the lookup; > 0 or none.
  TAPEGRAD_ARG(std::optional<double>, max_norm) = std::nullopt;
  /// The p of max_norm's p-norm, a number (inf allowed); default 2.
  TAPEGRAD_ARG(double, norm_type) = 2.0;
  /// Divide each row's gradient by its id's count in the batch; default false (not with sparse).
  TAPEGRAD_ARG(bool, scale_grad_by_freq) = false;
  /// Give weight a row-sparse gradient, the touched rows only (SGD, SparseAdam); default false.
  TAPEGRAD_ARG(bool, sparse) = false;
  /// Initial weight (num_embeddings, embedding_dim), used as given (the module's; default none).
  TAPEGRAD_ARG(std::optional<Array>, _weight) = std::nullopt;
  /// Weight starts frozen (requires_grad false); unset: Embedding trains it, from_pretrained not.
  TAPEGRAD_ARG(std::optional<bool>, _freeze) = std::nullopt;
};

namespace ops {

/// Checks the lookup's five options for a table of `num_embeddings` rows, PyTorch's text first:
/// padding_idx in [-num, num), max_norm > 0 (NaN refused), norm_type a number, not both sparse and
/// scale_grad_by_freq. Throws ValueError naming `where` ("embedding", "Embedding 'lut'"); returns
/// padding_idx counted from the start, in [0, num). ops::embedding calls it at every lookup, with
/// weight's rows; nn::Embedding once, at construction.
std::optional<std::int64_t> check_embedding_options(const EmbeddingOptions& options,
                                                    std::int64_t num_embeddings,
                                                    const std::string& where);

/// ids: any shape S, weight: (num, dim) -> S + (dim,), y[s, :] = weight[ids[s], :].
/// An id outside [0, num) is an IndexError naming the id and its position, checked before
/// anything (including the max_norm renorm) is changed. A weight that is not 2-D is a ShapeError;
/// padding_idx outside [-num, num), max_norm <= 0 or NaN, a NaN norm_type, and sparse together with
/// scale_grad_by_freq are ValueErrors. max_norm rescales the referenced rows of weight in place
/// (bumping its version) even when weight does not require grad, as PyTorch does.
Tensor embedding(const IndexArray& ids, const Tensor& weight, const EmbeddingOptions& options = {});

/// embedding(ids, weight) * scale in one pass (the scaled Embeddings of the tutorials, fused).
/// Same result, bit for bit, as ops::mul(ops::embedding(ids, weight, options), scale).
Tensor embedding_scaled(const IndexArray& ids, const Tensor& weight, double scale,
                        const EmbeddingOptions& options = {});

/// dropout(embedding(ids, weight) * scale + rows) in one pass: the tutorials' scaled embedding,
/// the positional table added to it and the dropout after it (InputEmbedding), for ids (B, L) and
/// a table whose first L rows of D floats are added to each of the B rows: y (B, L, D). Backward
/// computes the mask again inside the scatter into weight's gradient. The same values and
/// gradients, bit for bit, as ops::add_rows_dropout(ops::embedding_scaled(ids, weight, scale,
/// options), rows, p, training, stream); one tape entry, "embedding_add_rows_dropout". Errors as
/// embedding's, plus ShapeError for ids not (B, L) or a table that does not fit.
Tensor embedding_add_rows_dropout(const IndexArray& ids, const Tensor& weight, double scale,
                                  const Array& rows, double p, bool training, DropoutStream stream,
                                  const EmbeddingOptions& options = {});

}  // namespace ops
}  // namespace tapegrad
