// src/nn/embedding.cpp
//
// The Embedding module: option validation (once, at construction), initialisation, and forward
// through ops::embedding inside a ModuleScope, so errors and tape entries name the module's path.
// The padding row is zeroed by reset_parameters() only: a weight given through _weight or
// from_pretrained is used exactly as supplied (pytorch/pytorch#1812, #6411, #46585).
#include "tapegrad/nn/embedding.hpp"

#include <cmath>
#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/sizes.hpp"

namespace tapegrad::nn {

namespace {
// Checks every option (PyTorch's text first where it has one).
void check_options(const EmbeddingOptions& o) {
  const std::int64_t num = o.num_embeddings(), dim = o.embedding_dim();
  check<ValueError>(num >= 0 && dim >= 0, "Trying to create tensor with negative dimension ",
                    std::min(num, dim), ": [", num, ", ", dim,
                    "] | Embedding: expected num_embeddings >= 0 and embedding_dim >= 0, got (",
                    num, ", ", dim, ")");
  if (const auto pad = o.padding_idx())
    check<ValueError>(-num <= *pad && *pad < num,
                      "Padding_idx must be within num_embeddings | Embedding: ",
                      "expected padding_idx in [", -num, ", ", num, "), got ", *pad);
  if (const auto max_norm = o.max_norm())
    check<ValueError>(*max_norm > 0.0, "Embedding: expected max_norm > 0, got ",
                      py_float(*max_norm), "; leave max_norm unset to never renormalise");
  check<ValueError>(!std::isnan(o.norm_type()),
                    "Embedding: expected a norm_type that is a number, got nan");
  check<ValueError>(
      !(o.sparse() && o.scale_grad_by_freq()),
      "embedding_backward: scale_grad_by_freq not supported with sparse gradients | Embedding: ",
      "expected at most one of sparse and scale_grad_by_freq, got both");
  if (const auto& w = o._weight())
    check<ValueError>(
        w->dimension() == 2 && w->shape()[0] == static_cast<std::size_t>(num) &&
            w->shape()[1] == static_cast<std::size_t>(dim),
        "Shape of weight does not match num_embeddings and embedding_dim | Embedding: expected (",
        num, ", ", dim, "), got ", w->shape());
}

// The options the module keeps: checked, padding_idx normalised to [0, num) (-1 -> num - 1), and
// no copy of _weight (the array lives once, in `weight`).
EmbeddingOptions kept_options(const EmbeddingOptions& o) {
  check_options(o);
  std::optional<std::int64_t> pad = o.padding_idx();
  if (pad && *pad < 0) *pad += o.num_embeddings();
  EmbeddingOptions kept(o.num_embeddings(), o.embedding_dim());
  kept.padding_idx(pad).max_norm(o.max_norm()).norm_type(o.norm_type());
  kept.scale_grad_by_freq(o.scale_grad_by_freq()).sparse(o.sparse())._freeze(o._freeze());
  return kept;
}
}  // namespace

Embedding::Embedding(EmbeddingOptions options, std::shared_ptr<Generator> generator)
    : options_(kept_options(options)),
      generator_(generator ? std::move(generator) : default_generator()) {
  const std::optional<Array>& given = options._weight();
  weight = register_parameter(
      "weight", Parameter(given ? *given
                                : new_array({static_cast<std::size_t>(options_.num_embeddings()),
                                             static_cast<std::size_t>(options_.embedding_dim())},
                                            "Embedding: weight"),
                          /*requires_grad=*/!options_._freeze()));
  if (!given) reset_parameters();
}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim)
    : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}

std::shared_ptr<Embedding> Embedding::from_pretrained(const Array& embeddings,
                                                      EmbeddingFromPretrainedOptions o) {
  check<ValueError>(
      embeddings.dimension() == 2, "Embeddings parameter is expected to be 2-dimensional | ",
      "Embedding.from_pretrained: expected a 2-D array (num_embeddings, embedding_dim), got shape ",
      embeddings.shape());
  EmbeddingOptions options(static_cast<std::int64_t>(embeddings.shape()[0]),
                           static_cast<std::int64_t>(embeddings.shape()[1]));
  options.padding_idx(o.padding_idx()).max_norm(o.max_norm()).norm_type(o.norm_type());
  options.scale_grad_by_freq(o.scale_grad_by_freq())
      .sparse(o.sparse())
      ._weight(embeddings)
      ._freeze(o.freeze());
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

EmbeddingFuncOptions Embedding::func_options() const {
  return EmbeddingFuncOptions()
      .padding_idx(options_.padding_idx())
      .max_norm(options_.max_norm())
      .norm_type(options_.norm_type())
      .scale_grad_by_freq(options_.scale_grad_by_freq())
      .sparse(options_.sparse());
}

Tensor Embedding::forward(const IndexArray& ids) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::embedding(ids, weight, func_options());
}

Tensor Embedding::forward_scaled(const IndexArray& ids, double scale) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::embedding_scaled(ids, weight, scale, func_options());
}

void Embedding::extra_repr(std::ostream& os) const {
  os << options_.num_embeddings() << ", " << options_.embedding_dim();
  if (const auto pad = options_.padding_idx()) os << ", padding_idx=" << *pad;
  if (const auto max_norm = options_.max_norm()) os << ", max_norm=" << py_float(*max_norm);
  if (options_.norm_type() != 2.0) os << ", norm_type=" << py_float(options_.norm_type());
  if (options_.scale_grad_by_freq()) os << ", scale_grad_by_freq=True";
  if (options_.sparse()) os << ", sparse=True";
}

}  // namespace tapegrad::nn
