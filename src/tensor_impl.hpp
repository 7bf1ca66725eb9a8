// src/tensor_impl.hpp (private)
//
// What a Tensor handle points to. The data lives in a Storage shared with detach()ed handles,
// together with the version counter that in-place writes bump; the gradient, the flags and the
// name belong to the tensor itself.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tapegrad/tensor.hpp"

namespace tapegrad {

struct Storage {
  Array data;
  std::uint64_t version = 0;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  bool requires_grad = false;
  bool is_leaf = true;
  bool is_buffer = false;                   // a Buffer: never requires grad, never has .grad
  std::optional<Array> grad;                // a leaf's .grad, or an intermediate's pending gradient
  std::unique_ptr<RowSparseGrad> sparse_grad; // a leaf's row-sparse .grad (rare: kept out of line)
  std::string name;                         // registered path of a parameter or buffer
  std::string producer;                     // the op that produced a non-leaf
};

/// Internal access for the tape and Parameter/Buffer (the fields are not part of the public API).
struct TensorAccess {
  static TensorImpl& impl(const Tensor& t) { return *t.impl_; }
  static std::shared_ptr<TensorImpl>& handle(Tensor& t) { return t.impl_; }
};

}  // namespace tapegrad
