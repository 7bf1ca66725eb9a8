// src/tensor_impl.hpp (private)
//
// What a Tensor handle points to. The data lives in a Storage shared with detach()ed handles,
// together with the version counter that in-place writes bump; the gradient, the flags and the
// name belong to the tensor itself.
//
// A new tensor's TensorImpl and its Storage are one allocation (TensorBlock): every op makes a
// tensor, and a second malloc/free per op was a tenth of W2's per-op cost. A handle that shares
// another tensor's storage (detach(), Parameter(tensor)) points at it and keeps its block alive,
// which keeps the whole of that tensor's record (its gradient included) until the share is gone:
// unlike PyTorch's, where a share keeps only the data. Shares are few (in-place dropout's output,
// a Parameter made from a tensor, a learner's snapshot), so the simpler layout wins.
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
  Storage* storage = nullptr;               // this tensor's data: in its own block, or another's
  std::shared_ptr<const void> storage_owner; // keeps another tensor's block alive; empty for its own
  bool requires_grad = false;
  bool is_leaf = true;
  bool is_buffer = false;                   // a Buffer: never requires grad, never has .grad
  std::optional<Array> grad;                // a leaf's .grad, or an intermediate's pending gradient
  std::unique_ptr<RowSparseGrad> sparse_grad; // a leaf's row-sparse .grad (rare: kept out of line)
  std::string name;                         // registered path of a parameter or buffer
  std::string producer;                     // the op that produced a non-leaf
};

/// A tensor and its storage in one allocation (see above). The handle is an aliasing shared_ptr
/// to `impl`; `impl.storage` points at `storage` with no owner, so there is no reference cycle.
struct TensorBlock {
  Storage storage;
  TensorImpl impl;
};

/// A handle sharing `from`'s data and version counter (what detach() returns).
inline std::shared_ptr<TensorImpl> share_storage(const std::shared_ptr<TensorImpl>& from) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = from->storage;
  impl->storage_owner = from->storage_owner ? from->storage_owner : std::shared_ptr<const void>(from);
  return impl;
}

/// Internal access for the tape and Parameter/Buffer (the fields are not part of the public API).
struct TensorAccess {
  static TensorImpl& impl(const Tensor& t) { return *t.impl_; }
  static std::shared_ptr<TensorImpl>& handle(Tensor& t) { return t.impl_; }
  static const std::shared_ptr<TensorImpl>& handle(const Tensor& t) { return t.impl_; }
};

}  // namespace tapegrad
