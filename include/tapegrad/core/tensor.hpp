// include/tapegrad/core/tensor.hpp
//
// Tensor is a cheap, shared HANDLE to a float32 array, its gradient and its version counter,
// like torch::Tensor. Copying a Tensor never copies the data:
//
//     Tensor a(xt::ones<float>({2, 3}));
//     Tensor b = a;                   // b and a are the same tensor
//     b.mutable_data()(0, 0) = 5;     // a sees 5 too, and a.version() went up
//
// clone() gives an independent copy (recorded, so gradients flow through it); detach() shares
// the data and the version counter but leaves the graph. Every op returns a new tensor with its
// own storage: there are no views. `const Tensor&` is shallow const: it does not make the data
// read-only. Leaves accumulate gradients (+=) until zero_grad(). The full rule:
// docs/semantics.md#tensors-parameters-and-buffers.
//
// A handle keeps its tensor's data alive. The tape does not: an entry refers to its inputs by
// edge() handles, which route gradients and know shapes but never read data. So the output of
// an op is freed once no handle and no backward that reads it remain (PyTorch frees what no
// saved tensor holds in the same way): `y = x + b` keeps neither x's nor b's values.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include <xtensor/xarray.hpp>

#include "tapegrad/core/errors.hpp"
#include "tapegrad/core/row_sparse.hpp"

namespace tapegrad {

using Array = xt::xarray<float>;              // the one value type
using IndexArray = xt::xarray<std::int64_t>;  // token ids and targets: data, never a gradient

struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;  ///< an empty handle; defined() is false
  explicit Tensor(Array data, bool requires_grad = false);
  Tensor(const Tensor& other) noexcept;
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  bool defined() const { return impl_ != nullptr; }
  const Array& data() const;    ///< read the values
  Array& mutable_data() const;  ///< write them: every handle sees it; bumps version()
  const Shape& shape() const;
  std::size_t dim() const { return shape().size(); }
  std::size_t numel() const;
  float item() const;             ///< the value of a one-element tensor
  std::uint64_t version() const;  ///< how many in-place writes the data has seen
  void bump_version() const;      ///< for code that wrote through a raw pointer

  bool requires_grad() const;
  /// Turns gradient tracking on or off for a leaf (PyTorch's requires_grad_). Throws on a Buffer
  /// asked for true, and on a non-leaf.
  const Tensor& requires_grad_(bool on = true) const;
  bool is_leaf() const;  ///< not the output of a recorded op

  // ---- gradients: absent, dense, or row-sparse (row_sparse.hpp) ----
  bool has_grad() const;
  bool grad_is_sparse() const;
  const Array& grad() const;                 ///< a leaf's dense gradient; throws otherwise
  const RowSparseGrad& sparse_grad() const;  ///< a leaf's row-sparse gradient; throws otherwise
  Array grad_dense() const;                  ///< a dense copy of either kind
  /// grad += g, after checking g's shape against this tensor's (names `op` on a mismatch).
  void accumulate_grad(const Array& g, const char* op = "accumulate_grad") const;
  void accumulate_grad(Array&& g, const char* op = "accumulate_grad") const;
  void accumulate_grad(const RowSparseGrad& g, const char* op = "accumulate_grad") const;
  void accumulate_grad(RowSparseGrad&& g,
                       const char* op = "accumulate_grad") const;  ///< adopts g when it can
  /// Drops the gradient (set_to_none) or zero-fills it in place, keeping its memory.
  void zero_grad(bool set_to_none = true) const;
  /// Replaces the gradient (an optimizer's or a user's explicit assignment, like `p.grad = g`).
  void set_grad(Array g) const;

  /// Backpropagates from this one-element tensor: replays, newest first, every tape entry it can
  /// reach, adding into the leaves' .grad. Without retain_graph the entries that ran are consumed,
  /// and a later backward that reaches one of them throws AutogradError (PyTorch's "Trying to
  /// backward through the graph a second time"). Any thread may run it (autograd/tape.hpp).
  void backward(bool retain_graph = false) const;
  /// The same with an explicit d(something)/d(this), of this tensor's shape. It becomes the first
  /// entry's gradient: pass std::move(g) to hand its buffer over instead of copying it.
  void backward(Array grad_output, bool retain_graph = false) const;

  /// Calls hook(tensor) each time a backward has finished this leaf's gradient: every entry that
  /// adds into it has run (PyTorch's register_post_accumulate_grad_hook). Returns an id for
  /// remove_hook(). Only leaves have hooks (AutogradError otherwise).
  std::size_t register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  /// Removes a hook registered above (ValueError for an unknown id).
  void remove_hook(std::size_t id) const;

  Tensor clone() const;   ///< differentiable deep copy
  Tensor detach() const;  ///< same data and version, no graph, no grad

  const std::string& name() const;  ///< "embed.lut.weight"; "" for op results
  void set_name(std::string name) const;
  /// "'embed.lut.weight' (10, 3)" or "tensor (10, 3)": how error messages refer to it.
  std::string describe() const;

  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }  ///< identity
  TensorImpl* impl() const { return impl_.get(); }

  /// The same tensor for its place in the graph only: an edge routes gradients (accumulate_grad,
  /// requires_grad, the tape's traversal) and knows its shape and name, but does not keep the
  /// data alive, and data() through it throws. An op whose backward needs only an input's shape
  /// (add, cat, a product's side whose gradient is not wanted) captures `x.edge()`, so that the
  /// tape does not hold x's values; the tape holds every entry's inputs this way. The data of a
  /// non-leaf goes when its last non-edge handle goes.
  Tensor edge() const;
  bool is_edge() const { return edge_; }

 protected:
  std::shared_ptr<TensorImpl> impl_;
  bool edge_ = false;  // an edge() handle: does not count towards keeping the data

  /// Points this (empty) handle at `impl` and counts it as one of the handles that keep the data.
  void adopt(std::shared_ptr<TensorImpl> impl);
  friend class Parameter;
  friend class Buffer;
  friend struct TensorAccess;
};

/// A summary a learner can read: shape, min/max/mean/std and the count of NaN and Inf.
std::string summary(const Tensor& t);
/// The summary, then the values when there are at most 64 of them.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace tapegrad

namespace xt {
// `std::cout << w.grad()` prints an Array as xtensor's <xtensor/xio.hpp> does, without the user
// including it (the heavy header stays in src/). Declared in xtensor's namespace so that it is
// found wherever an Array is printed; where xio.hpp is included too, this exact match is chosen.
std::ostream& operator<<(std::ostream& os, const xarray<float>& a);
std::ostream& operator<<(std::ostream& os, const xarray<std::int64_t>& a);
}  // namespace xt
