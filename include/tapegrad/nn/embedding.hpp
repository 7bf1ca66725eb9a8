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
// they are given (PyTorch's behaviour). The options are tapegrad::EmbeddingOptions, the lookup's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/ops/embedding.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn {

/// tapegrad::EmbeddingOptions (ops/embedding.hpp): the module's options are the lookup's.
using tapegrad::EmbeddingOptions;

class Embedding : public Module {
 public:
  /// Validates the options (ValueError with PyTorch's text where it has one; the lookup's five by
  /// ops::check_embedding_options) and initialises weight: _weight if given, else N(0, 1) from
  /// `generator` (the default one if null) with the padding row then set to 0.
  explicit Embedding(EmbeddingOptions options, std::shared_ptr<Generator> generator = nullptr);
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim);
  /// An Embedding whose weight is a copy of `embeddings` (num, dim), which also gives the shape
  /// (the options' num_embeddings, embedding_dim and _weight are replaced); frozen unless
  /// _freeze(false), as PyTorch's from_pretrained(freeze=True).
  static std::shared_ptr<Embedding> from_pretrained(const Array& embeddings,
                                                    EmbeddingOptions options = {});

  /// ids: any shape S -> S + (embedding_dim,). IndexError for an id outside [0, num_embeddings).
  Tensor forward(const IndexArray& ids);
  /// forward(ids) * scale as one fused op (float(scale) rounding, bit-identical to the two ops).
  Tensor forward_scaled(const IndexArray& ids, double scale);
  /// Redraws weight from N(0, 1) and zeroes the padding row (in place; bumps the version).
  void reset_parameters();

  /// Normalised, in [0, num_embeddings).
  std::optional<std::int64_t> padding_idx() const { return options_.padding_idx(); }
  std::int64_t num_embeddings() const { return options_.num_embeddings(); }
  std::int64_t embedding_dim() const { return options_.embedding_dim(); }
  /// The validated options, padding_idx normalised and _freeze set; they keep no copy of _weight.
  /// What forward passes to the lookup, and what modules that fuse the lookup with what follows
  /// it pass to theirs (InputEmbedding).
  const EmbeddingOptions& options() const { return options_; }

  Parameter weight;  ///< registered as "weight", (num_embeddings, embedding_dim)

  std::string type_name() const override { return "Embedding"; }
  /// "10, 3", then each option that differs from its default, as PyTorch prints it:
  /// "10, 3, padding_idx=0, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True".
  void extra_repr(std::ostream& os) const override;

 private:
  EmbeddingOptions options_;
  std::shared_ptr<Generator> generator_;
};

}  // namespace tapegrad::nn
