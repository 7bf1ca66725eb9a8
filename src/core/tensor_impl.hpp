// src/core/tensor_impl.hpp (private)
//
// What a Tensor handle points to. The data lives in a Storage, shared with detach()ed handles,
// together with the version counter that in-place writes bump. The gradient, the flags, the name
// and, for the output of a recorded op, the tape entry that produced it belong to the tensor
// itself. A detached share keeps only the Storage alive, never the tensor's entry: that is what
// lets an op's closure keep `y.detach()` (its own output's data) without owning its own entry.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/core/detail/object_cache.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad::autograd::detail {
struct EntryBase;  // a tape entry (tapegrad/autograd/record.hpp): the floor above the tensor's
}

namespace tapegrad {

struct Storage {
  Array data;
  std::uint64_t version = 0;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;  // this tensor's data, perhaps shared with others
  // The handles that keep the data (every Tensor but edges). When the last goes and the tensor is
  // the output of an op that edges still refer to, the data is dropped (`storage` null) and only
  // its shape is kept, for the tape's listing and the gradient's shape check.
  std::atomic<std::size_t> data_handles{0};
  Shape released_shape;
  bool requires_grad = false;
  bool is_buffer = false;  // a Buffer: never requires grad, never has .grad
  // The entry that produced this tensor, owned by it (null for a leaf). The entry holds this
  // tensor's inputs and never this tensor, so there is no cycle. Deleted through
  // autograd::detail::destroy_entry, which frees a long chain of entries without deep recursion.
  struct EntryDeleter {
    void operator()(autograd::detail::EntryBase* e) const;
  };
  std::unique_ptr<autograd::detail::EntryBase, EntryDeleter> grad_fn;
  std::optional<Array> grad;  // a leaf's .grad, or an intermediate's pending gradient
  std::unique_ptr<RowSparseGrad> sparse_grad;  // a leaf's row-sparse .grad (rare: kept out of line)
  std::string name;                            // registered path of a parameter or buffer
  // Called once a backward has finished a leaf's gradient (register_post_accumulate_grad_hook).
  std::vector<std::pair<std::size_t, std::function<void(const Tensor&)>>> hooks;

  bool is_leaf() const { return grad_fn == nullptr; }
  /// The op that produced this tensor, "" for a leaf (defined in src/autograd/record.cpp).
  const char* producer() const;
};

/// ValueError unless the handle points to a tensor (what every Tensor member checks first).
inline void check_defined(const std::shared_ptr<TensorImpl>& impl) {
  check<ValueError>(
      impl != nullptr,
      "Tensor: expected a defined tensor, got an empty handle; construct it from an Array first");
}

/// A new tensor owning `data`.
inline std::shared_ptr<TensorImpl> make_impl(Array&& data) {
  auto impl = std::allocate_shared<TensorImpl>(detail::CachingAllocator<TensorImpl>());
  impl->storage = std::allocate_shared<Storage>(detail::CachingAllocator<Storage>());
  impl->storage->data = std::move(data);
  return impl;
}

/// A handle sharing `from`'s data and version counter, and nothing else (what detach() returns).
inline std::shared_ptr<TensorImpl> share_storage(const TensorImpl& from) {
  auto impl = std::allocate_shared<TensorImpl>(detail::CachingAllocator<TensorImpl>());
  impl->storage = from.storage;
  return impl;
}

/// Internal access for the engine and Parameter/Buffer (the fields are not part of the public API).
struct TensorAccess {
  static TensorImpl& impl(const Tensor& t) { return *t.impl_; }
  static std::shared_ptr<TensorImpl>& handle(Tensor& t) { return t.impl_; }
  static const std::shared_ptr<TensorImpl>& handle(const Tensor& t) { return t.impl_; }
  static Tensor wrap(std::shared_ptr<TensorImpl> impl) {
    Tensor t;
    t.adopt(std::move(impl));
    return t;
  }
};

}  // namespace tapegrad
