// src/core/tensor.cpp
//
// The Tensor handle: data access with version counting, detach, names, and the learner's summary
// printout. What a tensor does in a backward pass (accumulate_grad, backward, clone) is the
// autograd floor's: src/autograd/tensor_grad.cpp.
#include "tapegrad/core/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <ostream>
#include <sstream>

#include <xtensor/xio.hpp>

#include "tapegrad/core/sizes.hpp"
#include "tensor_impl.hpp"

namespace tapegrad {

Tensor::Tensor(Array data, bool requires_grad) {
  // An array made with sizes that multiply past 2^63 holds a wrapped-around number of elements
  // (xtensor does not check): refuse it before anything reads it.
  std::size_t numel = 0;
  if (data.dimension() > 1 && !(numel_fits(data.shape(), &numel) && numel == data.size())) {
    checked_numel(data.shape(), "Tensor");  // names the sizes that overflow
    fail<ShapeError>("Tensor: the array of shape ", data.shape(), " holds ", data.size(),
                     " elements, not the product of its sizes");
  }
  adopt(make_impl(std::move(data)));
  impl_->requires_grad = requires_grad;
}

// ---- handles: the ones that keep the data, and edges -------------------------------------------

void Tensor::adopt(std::shared_ptr<TensorImpl> impl) {
  impl_ = std::move(impl);
  edge_ = false;
  if (impl_) impl_->data_handles.fetch_add(1, std::memory_order_relaxed);
}

namespace {
// A data-keeping handle of `impl` is going. The last one drops the data of an op's output that
// edges (the tape) still refer to: nothing can read it any more. A leaf keeps its data (a hook,
// an optimizer or the next forward reads it through the parameter), and a tensor nobody else
// refers to is freed whole by its last handle anyway.
void let_go(const std::shared_ptr<TensorImpl>& impl) {
  if (impl->data_handles.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (impl->is_leaf() || impl.use_count() == 1 || impl->storage == nullptr) return;
  impl->released_shape = impl->storage->data.shape();
  impl->storage.reset();
}
}  // namespace

Tensor::Tensor(const Tensor& other) noexcept : impl_(other.impl_), edge_(other.edge_) {
  if (impl_ && !edge_) impl_->data_handles.fetch_add(1, std::memory_order_relaxed);
}
Tensor::Tensor(Tensor&& other) noexcept : impl_(std::move(other.impl_)), edge_(other.edge_) {}
Tensor& Tensor::operator=(const Tensor& other) noexcept {
  Tensor copy(other);
  return *this = std::move(copy);
}
Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  if (impl_ && !edge_) let_go(impl_);
  impl_ = std::move(other.impl_);
  edge_ = other.edge_;
  return *this;
}
Tensor::~Tensor() {
  if (impl_ && !edge_) let_go(impl_);
}

Tensor Tensor::edge() const {
  Tensor out;
  out.impl_ = impl_;
  out.edge_ = true;
  return out;
}

namespace {
const Shape& shape_of(const TensorImpl& impl) {
  return impl.storage ? impl.storage->data.shape() : impl.released_shape;
}

// "'embed.lut.weight' (10, 3)", "the output of 'add' (2, 3)" or "tensor (10, 3)".
std::string describe(const TensorImpl& impl) {
  std::ostringstream os;
  if (!impl.name.empty())
    os << '\'' << impl.name << "' ";
  else if (!impl.is_leaf())
    os << "the output of '" << impl.producer() << "' ";
  else
    os << "tensor ";
  os << str(shape_of(impl));
  return os.str();
}

// The data of `impl` as a non-edge handle reads it; a clear error where it cannot be read.
Storage& storage_of(const std::shared_ptr<TensorImpl>& impl, bool edge, const char* what) {
  check_defined(impl);
  if (edge)
    fail<AutogradError>("Tensor::", what, ": this handle is an edge() of ", describe(*impl),
                        ", which routes gradients but never reads data; an op whose backward "
                        "reads an input must capture the input itself, not its edge()");
  if (impl->storage == nullptr)  // cannot happen through a non-edge handle; kept as a guard
    fail<AutogradError>("Tensor::", what, ": the data of ", describe(*impl),
                        " was freed (no handle kept it)");
  return *impl->storage;
}
}  // namespace

const Array& Tensor::data() const { return storage_of(impl_, edge_, "data").data; }

Array& Tensor::mutable_data() const {
  Storage& s = storage_of(impl_, edge_, "mutable_data");
  ++s.version;
  return s.data;
}

const Shape& Tensor::shape() const {
  check_defined(impl_);
  return shape_of(*impl_);
}
std::size_t Tensor::numel() const {
  std::size_t n = 1;
  for (std::size_t d : shape()) n *= d;
  return n;
}

float Tensor::item() const {
  check<ValueError>(
      numel() == 1, "a Tensor with ", numel(),
      " elements cannot be converted to Scalar | item: expected one element, got shape ", shape());
  return data().data()[0];
}

std::uint64_t Tensor::version() const { return storage_of(impl_, edge_, "version").version; }
void Tensor::bump_version() const { ++storage_of(impl_, edge_, "bump_version").version; }

bool Tensor::requires_grad() const { return impl_ != nullptr && impl_->requires_grad; }
bool Tensor::is_leaf() const { return impl_ == nullptr || impl_->is_leaf(); }

const Tensor& Tensor::requires_grad_(bool on) const {
  check_defined(impl_);
  if (on && impl_->is_buffer)
    fail<ValueError>(
        "Buffer ", describe(),
        ": expected requires_grad=false, got true; register it as a Parameter to train it");
  check<AutogradError>(
      impl_->is_leaf(),
      "you can only change requires_grad flags of leaf variables. | requires_grad_: ",
      "expected a leaf tensor, got the output of '", impl_->producer(), "'");
  impl_->requires_grad = on;
  return *this;
}

// ---- gradients -------------------------------------------------------------------------------

bool Tensor::has_grad() const {
  return impl_ != nullptr && impl_->is_leaf() &&
         (impl_->grad.has_value() || impl_->sparse_grad != nullptr);
}
bool Tensor::grad_is_sparse() const { return has_grad() && impl_->sparse_grad != nullptr; }

const Array& Tensor::grad() const {
  check_defined(impl_);
  check<AutogradError>(impl_->is_leaf(),
                       "Tensor::grad: expected a leaf tensor, got the output of '",
                       impl_->producer(), "'; intermediate gradients are freed by backward()");
  if (impl_->sparse_grad != nullptr)
    fail<TypeError>("Tensor::grad: ", describe(),
                    " has a row-sparse gradient; use sparse_grad() or grad_dense()");
  if (!impl_->grad.has_value())
    fail<AutogradError>("Tensor::grad: ", describe(),
                        " has no gradient; call backward() on a loss that depends on it first (or "
                        "check has_grad())");
  return *impl_->grad;
}

const RowSparseGrad& Tensor::sparse_grad() const {
  check_defined(impl_);
  if (impl_->sparse_grad == nullptr)
    fail<TypeError>("Tensor::sparse_grad: ", describe(), " has no row-sparse gradient",
                    impl_->grad ? " (its gradient is dense; use grad())" : "");
  return *impl_->sparse_grad;
}

Array Tensor::grad_dense() const {
  if (grad_is_sparse()) return impl_->sparse_grad->to_dense();
  return grad();
}

void Tensor::zero_grad(bool set_to_none) const {
  if (impl_ == nullptr) return;
  if (set_to_none) {
    impl_->grad.reset();
    impl_->sparse_grad.reset();
    return;
  }
  if (impl_->grad) std::fill(impl_->grad->begin(), impl_->grad->end(), 0.0f);
  if (impl_->sparse_grad) {  // an empty row-sparse gradient, as PyTorch's zero_()
    impl_->sparse_grad->indices = IndexArray::from_shape({0});
    impl_->sparse_grad->values = Array::from_shape({0, impl_->sparse_grad->dense_shape[1]});
  }
}

// ---- detach, names ------------------------------------------------------------------------------

Tensor Tensor::detach() const {
  check_defined(impl_);
  storage_of(impl_, edge_, "detach");
  Tensor out;
  out.adopt(share_storage(*impl_));  // same data, same version counter, no graph
  return out;
}

const std::string& Tensor::name() const {
  static const std::string none;
  return impl_ ? impl_->name : none;
}
void Tensor::set_name(std::string name) const {
  check_defined(impl_);
  impl_->name = std::move(name);
}

std::string Tensor::describe() const {
  return impl_ == nullptr ? "an empty tensor" : ::tapegrad::describe(*impl_);
}

// ---- printing -----------------------------------------------------------------------------------

std::string summary(const Tensor& t) {
  if (!t.defined()) return "Tensor(undefined)";
  const Array& a = t.data();
  double lo = INFINITY, hi = -INFINITY, sum = 0.0, sum2 = 0.0;
  std::size_t nan = 0, inf = 0, finite = 0;
  for (float v : a) {
    if (std::isnan(v)) {
      ++nan;
      continue;
    }
    if (std::isinf(v)) {
      ++inf;
      continue;
    }
    ++finite;
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
    sum += v;
    sum2 += double(v) * v;
  }
  std::ostringstream os;
  os.precision(6);
  os << "Tensor(";
  if (!t.name().empty()) os << '\'' << t.name() << "', ";
  os << "shape=" << str(a.shape());
  if (finite > 0) {
    const double mean = sum / double(finite);
    const double var = std::max(0.0, sum2 / double(finite) - mean * mean);
    os << ", min=" << lo << ", max=" << hi << ", mean=" << mean << ", std=" << std::sqrt(var);
  }
  os << ", nan=" << nan << ", inf=" << inf;
  if (t.requires_grad()) os << ", requires_grad";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  os << summary(t);
  if (t.defined() && t.numel() <= 64) os << '\n' << t.data();
  return os;
}

}  // namespace tapegrad

namespace xt {
std::ostream& operator<<(std::ostream& os, const xarray<float>& a) { return pretty_print(a, os); }
std::ostream& operator<<(std::ostream& os, const xarray<std::int64_t>& a) {
  return pretty_print(a, os);
}
}  // namespace xt
