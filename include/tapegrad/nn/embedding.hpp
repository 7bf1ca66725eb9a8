// include/tapegrad/nn/embedding.hpp
//
// Embedding: one learned row per token id, as PyTorch's torch.nn.Embedding
// (https://pytorch.org/docs/stable/generated/torch.nn.Embedding.html; docs/semantics.md#embedding).
// weight: (num_embeddings, embedding_dim); ids of any shape S -> S + (embedding_dim,). The lookup
// and its scatter-add backward are ops::embedding; this module owns the weight, validates the
// options once, initialises the weight from N(0, 1) (PyTorch's reset_parameters) and zeroes the
// padding row.
//
//     Embedding emb(EmbeddingOptions(10, 3).padding_idx(0));
//     Tensor y = emb.forward(IndexArray{{1, 2, 0}});     // (1, 3, 3); row 0 is zeros
//
// The padding row is zeroed only at initialisation: from_pretrained() and _weight keep what
// they are given (PyTorch's behaviour).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/ops/embedding.hpp"
#include "tapegrad/random.hpp"

namespace tapegrad::nn {

class EmbeddingOptions {
 public:
  EmbeddingOptions(std::int64_t num_embeddings, std::int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  /// Row that starts at zero and never receives gradient (the <pad> token); negative counts
  /// from the end, in [-num_embeddings, num_embeddings).
  EmbeddingOptions& padding_idx(std::optional<std::int64_t> v) {
    padding_idx_ = v;
    return *this;
  }
  /// Renormalise each looked-up row whose norm exceeds this, in place, before the lookup (> 0).
  EmbeddingOptions& max_norm(std::optional<double> v) {
    max_norm_ = v;
    return *this;
  }
  /// The p of the p-norm max_norm uses (default 2).
  EmbeddingOptions& norm_type(double v) {
    norm_type_ = v;
    return *this;
  }
  /// Divide each row's gradient by the number of times its id occurs in the batch.
  EmbeddingOptions& scale_grad_by_freq(bool v) {
    scale_grad_by_freq_ = v;
    return *this;
  }
  /// Give weight a row-sparse gradient (for SGD and SparseAdam).
  EmbeddingOptions& sparse(bool v) {
    sparse_ = v;
    return *this;
  }
  /// A (num_embeddings, embedding_dim) initial weight, used as given (PyTorch's _weight).
  EmbeddingOptions& _weight(Array v) {
    weight_ = std::move(v);
    return *this;
  }
  /// Whether weight starts frozen, requires_grad = false (PyTorch's _freeze, default false).
  EmbeddingOptions& _freeze(bool v) {
    freeze_ = v;
    return *this;
  }

  std::int64_t num_embeddings() const { return num_embeddings_; }
  std::int64_t embedding_dim() const { return embedding_dim_; }
  std::optional<std::int64_t> padding_idx() const { return padding_idx_; }
  std::optional<double> max_norm() const { return max_norm_; }
  double norm_type() const { return norm_type_; }
  bool scale_grad_by_freq() const { return scale_grad_by_freq_; }
  bool sparse() const { return sparse_; }
  const std::optional<Array>& _weight() const { return weight_; }
  bool _freeze() const { return freeze_; }

 private:
  std::int64_t num_embeddings_, embedding_dim_;
  std::optional<std::int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2.0;
  bool scale_grad_by_freq_ = false;
  bool sparse_ = false;
  std::optional<Array> weight_;
  bool freeze_ = false;
};

/// The options of Embedding::from_pretrained (libtorch's spelling); note freeze defaults to true.
class EmbeddingFromPretrainedOptions {
 public:
  /// Whether the weight stays fixed during training (default true, as in PyTorch).
  EmbeddingFromPretrainedOptions& freeze(bool v) {
    freeze_ = v;
    return *this;
  }
  /// As EmbeddingOptions::padding_idx; the given row is kept as it is, not zeroed.
  EmbeddingFromPretrainedOptions& padding_idx(std::optional<std::int64_t> v) {
    padding_idx_ = v;
    return *this;
  }
  /// As EmbeddingOptions::max_norm.
  EmbeddingFromPretrainedOptions& max_norm(std::optional<double> v) {
    max_norm_ = v;
    return *this;
  }
  /// As EmbeddingOptions::norm_type.
  EmbeddingFromPretrainedOptions& norm_type(double v) {
    norm_type_ = v;
    return *this;
  }
  /// As EmbeddingOptions::scale_grad_by_freq.
  EmbeddingFromPretrainedOptions& scale_grad_by_freq(bool v) {
    scale_grad_by_freq_ = v;
    return *this;
  }
  /// As EmbeddingOptions::sparse.
  EmbeddingFromPretrainedOptions& sparse(bool v) {
    sparse_ = v;
    return *this;
  }

  bool freeze() const { return freeze_; }
  std::optional<std::int64_t> padding_idx() const { return padding_idx_; }
  std::optional<double> max_norm() const { return max_norm_; }
  double norm_type() const { return norm_type_; }
  bool scale_grad_by_freq() const { return scale_grad_by_freq_; }
  bool sparse() const { return sparse_; }

 private:
  bool freeze_ = true;
  std::optional<std::int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2.0;
  bool scale_grad_by_freq_ = false;
  bool sparse_ = false;
};

class Embedding : public Module {
 public:
  /// Validates the options (ValueError with PyTorch's text where it has one) and initialises
  /// weight: _weight if given, else N(0, 1) from `generator` (the default one if null) with the
  /// padding row then set to 0.
  explicit Embedding(EmbeddingOptions options, std::shared_ptr<Generator> generator = nullptr);
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim);
  /// An Embedding whose weight is a copy of `embeddings` (num, dim), frozen unless freeze(false).
  static std::shared_ptr<Embedding> from_pretrained(const Array& embeddings,
                                                    EmbeddingFromPretrainedOptions options = {});

  /// ids: any shape S -> S + (embedding_dim,). IndexError for an id outside [0, num_embeddings).
  Tensor forward(const IndexArray& ids);
  /// forward(ids) * scale as one fused op (float(scale) rounding, bit-identical to the two ops).
  Tensor forward_scaled(const IndexArray& ids, double scale);
  /// Redraws weight from N(0, 1) and zeroes the padding row (in place; bumps the version).
  void reset_parameters();

  std::optional<std::int64_t> padding_idx() const {
    return options_.padding_idx();
  }  ///< normalised, >= 0
  std::int64_t num_embeddings() const { return options_.num_embeddings(); }
  std::int64_t embedding_dim() const { return options_.embedding_dim(); }
  /// The validated options, padding_idx normalised. They keep no copy of _weight.
  const EmbeddingOptions& options() const { return options_; }

  Parameter weight;  ///< registered as "weight", (num_embeddings, embedding_dim)

  /// The options as the ops take them (padding_idx normalised): for modules that fuse this
  /// lookup with what follows it (InputEmbedding).
  EmbeddingFuncOptions func_options() const;

  std::string type_name() const override { return "Embedding"; }
  /// "10, 3" then ", padding_idx=0", ", max_norm=1.0", ", norm_type=1.0" (if not 2),
  /// ", scale_grad_by_freq=True", ", sparse=True", as PyTorch prints them.
  void extra_repr(std::ostream& os) const override;

 private:
  EmbeddingOptions options_;
  std::shared_ptr<Generator> generator_;
};

}  // namespace tapegrad::nn
