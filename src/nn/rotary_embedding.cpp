// src/nn/rotary_embedding.cpp: the RotaryEmbedding module, its tables as non-persistent buffers
// and a thin shell around ops::rotary_embedding.
#include "tapegrad/nn/rotary_embedding.hpp"

#include <cmath>
#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/rotary.hpp"

namespace tapegrad::nn {

namespace {
RotaryEmbeddingOptions validated(RotaryEmbeddingOptions o) {
  check<ValueError>(o.head_dim() >= 2 && o.head_dim() % 2 == 0,
                    "RotaryEmbedding: expected an even head_dim >= 2 (the columns rotate in "
                    "pairs), got ",
                    o.head_dim());
  check<ValueError>(o.max_len() >= 1, "RotaryEmbedding: expected max_len >= 1, got ", o.max_len());
  check<ValueError>(o.base() > 0.0 && std::isfinite(o.base()),
                    "RotaryEmbedding: expected a finite base > 0, got ", o.base());
  check<ValueError>(!o.inv_freq() || o.inv_freq()->size() == std::size_t(o.head_dim() / 2),
                    "RotaryEmbedding: expected inv_freq of head_dim / 2 = ", o.head_dim() / 2,
                    " frequencies, got ", o.inv_freq() ? o.inv_freq()->size() : 0);
  return o;
}
}  // namespace

RotaryEmbedding::RotaryEmbedding(RotaryEmbeddingOptions options)
    : options_(validated(std::move(options))) {
  ops::RotaryTable table =
      options_.inv_freq()
          ? ops::rotary_table(*options_.inv_freq(), options_.max_len())
          : ops::rotary_table(options_.head_dim(), options_.max_len(), options_.base());
  cos = register_buffer("cos", Buffer(std::move(table.cos)), /*persistent=*/false);
  sin = register_buffer("sin", Buffer(std::move(table.sin)), /*persistent=*/false);
}

Tensor RotaryEmbedding::forward(const Tensor& x, std::int64_t offset) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::rotary_embedding(x, cos, sin, offset, options_.pairs());
}

Tensor RotaryEmbedding::forward_qkv(const Tensor& qkv, std::int64_t offset,
                                    std::optional<std::int64_t> n_kv_head) {
  autograd::ModuleScope scope(type_name(), path());
  return ops::rotary_embedding_qkv(qkv, cos, sin, offset, options_.pairs(), n_kv_head);
}

void RotaryEmbedding::extra_repr(std::ostream& os) const {
  os << "head_dim=" << options_.head_dim() << ", max_len=" << options_.max_len()
     << ", base=" << py_float(options_.base());
  if (options_.pairs() == ops::RotaryPairs::halves) os << ", pairs=halves";
  if (options_.inv_freq()) os << ", inv_freq=given";
}

}  // namespace tapegrad::nn
