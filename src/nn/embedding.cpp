// src/nn/embedding.cpp
//
// The Embedding module: option validation (once, at construction, the lookup's options by the op's
// own check), initialisation, and forward through ops::embedding inside a ModuleScope, so errors
// and tape entries name the module's path.
// The padding row is zeroed by reset_parameters() only: a weight given through _weight or
// from_pretrained is used exactly as supplied (pytorch/pytorch#1812, #6411, #46585).
#include "tapegrad/nn/embedding.hpp"

#include <algorithm>
#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/sizes.hpp"
#include "tapegrad/nn/skip_init.hpp"

namespace tapegrad::nn {

namespace {
// The options checked (the lookup's five by ops::check_embedding_options, the module's own here,
// PyTorch's text first), with padding_idx normalised to [0, num) (-1 -> num - 1) and _freeze
// resolved (unset: false, PyTorch's _freeze default).
EmbeddingOptions checked(EmbeddingOptions o, const std::string& where) {
  const std::int64_t num = o.num_embeddings(), dim = o.embedding_dim();
  check<ValueError>(num >= 0 && dim >= 0, "Trying to create tensor with negative dimension ",
                    std::min(num, dim), ": [", num, ", ", dim, "] | ", where,
                    ": expected num_embeddings >= 0 and embedding_dim >= 0, got (", num, ", ", dim,
                    ")");
  o.padding_idx(ops::check_embedding_options(o, num, where));
  if (const auto& w = o._weight())
    check<ValueError>(w->dimension() == 2 && w->shape()[0] == static_cast<std::size_t>(num) &&
                          w->shape()[1] == static_cast<std::size_t>(dim),
                      "Shape of weight does not match num_embeddings and embedding_dim | ", where,
                      ": expected (", num, ", ", dim, "), got ", w->shape());
  return o._freeze(o._freeze().value_or(false));
}
}  // namespace

Embedding::Embedding(EmbeddingOptions options, std::shared_ptr<Generator> generator)
    : options_(checked(std::move(options), context())),
      generator_(generator ? std::move(generator) : default_generator()) {
  const bool given = options_._weight().has_value();
  weight = register_parameter(
      "weight", Parameter(given ? *options_._weight()
                                : new_array({static_cast<std::size_t>(options_.num_embeddings()),
                                             static_cast<std::size_t>(options_.embedding_dim())},
                                            "Embedding: weight"),
                          /*requires_grad=*/!*options_._freeze()));
  options_._weight(std::nullopt);  // the array lives once, in `weight`
  if (!given && !init_skipped()) reset_parameters();
}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim)
    : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}

std::shared_ptr<Embedding> Embedding::from_pretrained(const Array& embeddings,
                                                      EmbeddingOptions options) {
  check<ValueError>(
      embeddings.dimension() == 2, "Embeddings parameter is expected to be 2-dimensional | ",
      "Embedding.from_pretrained: expected a 2-D array (num_embeddings, embedding_dim), got shape ",
      embeddings.shape());
  options.num_embeddings(static_cast<std::int64_t>(embeddings.shape()[0]))
      .embedding_dim(static_cast<std::int64_t>(embeddings.shape()[1]))
      ._weight(embeddings)
      ._freeze(options._freeze().value_or(true));  // PyTorch's from_pretrained(freeze=True)
  return std::make_shared<Embedding>(std::move(options));
}

void Embedding::reset_parameters() {
  // N(0, 1) as PyTorch's init.normal_, then the padding row exactly 0 (it never learns).
  autograd::NoGradGuard no_grad;
  Array& w = weight.mutable_data();
  normal_(w, 0.0, 1.0, generator_.get());
  if (const auto pad = options_.padding_idx()) {
    const auto dim = static_cast<std::size_t>(options_.embedding_dim());
    std::fill_n(w.data() + static_cast<std::size_t>(*pad) * dim, dim, 0.0f);
  }
}

Tensor Embedding::forward(const IndexArray& ids) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::embedding(ids, weight, options_);
}

Tensor Embedding::forward_scaled(const IndexArray& ids, double scale) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::embedding_scaled(ids, weight, scale, options_);
}

void Embedding::extra_repr(std::ostream& os) const {
  const EmbeddingOptions defaults;  // PyTorch prints what differs from them
  os << options_.num_embeddings() << ", " << options_.embedding_dim();
  if (const auto pad = options_.padding_idx()) os << ", padding_idx=" << *pad;
  if (const auto max_norm = options_.max_norm()) os << ", max_norm=" << py_float(*max_norm);
  if (options_.norm_type() != defaults.norm_type())
    os << ", norm_type=" << py_float(options_.norm_type());
  if (options_.scale_grad_by_freq() != defaults.scale_grad_by_freq())
    os << ", scale_grad_by_freq=True";
  if (options_.sparse() != defaults.sparse()) os << ", sparse=True";
}

}  // namespace tapegrad::nn
