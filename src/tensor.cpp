// src/tensor.cpp
//
// The Tensor handle: data access with version counting, gradient accumulation (the table of
// docs/semantics.md#gradients-dense-and-row-sparse), backward's entry point, clone/detach, and the
// learner's summary printout.
#include "tapegrad/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <ostream>

#include <xtensor/xio.hpp>

#include "autograd/engine.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/sizes.hpp"
#include "tensor_impl.hpp"

namespace tapegrad {

namespace {
void check_defined(const std::shared_ptr<TensorImpl>& impl) {
  check<ValueError>(
      impl != nullptr,
      "Tensor: expected a defined tensor, got an empty handle; construct it from an Array first");
}
}  // namespace

Tensor::Tensor(Array data, bool requires_grad) {
  // An array made with sizes that multiply past 2^63 holds a wrapped-around number of elements
  // (xtensor does not check): refuse it before anything reads it.
  std::size_t numel = 0;
  if (data.dimension() > 1 && !(numel_fits(data.shape(), &numel) && numel == data.size())) {
    checked_numel(data.shape(), "Tensor");  // names the sizes that overflow
    fail<ShapeError>("Tensor: the array of shape ", data.shape(), " holds ", data.size(),
                     " elements, not the product of its sizes");
  }
  impl_ = make_impl(std::move(data));
  impl_->requires_grad = requires_grad;
}

const Array& Tensor::data() const {
  check_defined(impl_);
  return impl_->storage->data;
}

Array& Tensor::mutable_data() const {
  check_defined(impl_);
  ++impl_->storage->version;
  return impl_->storage->data;
}

const Shape& Tensor::shape() const { return data().shape(); }
std::size_t Tensor::numel() const { return data().size(); }

float Tensor::item() const {
  check<ValueError>(
      numel() == 1, "a Tensor with ", numel(),
      " elements cannot be converted to Scalar | item: expected one element, got shape ", shape());
  return data().data()[0];
}

std::uint64_t Tensor::version() const {
  check_defined(impl_);
  return impl_->storage->version;
}
void Tensor::bump_version() const {
  check_defined(impl_);
  ++impl_->storage->version;
}

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

namespace {
void check_grad_shape(const Tensor& t, const Shape& g, const char* op) {
  if (g != t.shape())
    fail<AutogradError>(op, ": produced a gradient of shape ", g, " for ", t.describe(),
                        "; expected the tensor's shape ", t.shape(),
                        " (a broadcast input's gradient must go through ops::sum_to_shape)");
}

// Where a gradient may land: a leaf's .grad, or an intermediate that the running backward has
// reached (its pending gradient). Anything else is an op whose closure writes into a tensor it did
// not list among its inputs: that gradient would never flow on, so it is refused, naming the op.
void check_target(const Tensor& t, const TensorImpl& impl, const char* op) {
  if (impl.is_buffer)
    fail<AutogradError>(op, ": ", t.describe(), " is a Buffer and never has a gradient");
  if (!impl.is_leaf()) autograd::detail::expect_reached(impl, op);
}
}  // namespace

void Tensor::accumulate_grad(const Array& g, const char* op) const {
  check_defined(impl_);
  check_grad_shape(*this, g.shape(), op);
  check_target(*this, *impl_, op);
  TensorImpl& t = *impl_;
  if (t.sparse_grad) {  // row-sparse + dense -> dense
    Array dense = t.sparse_grad->to_dense();
    dense += g;
    t.sparse_grad.reset();
    t.grad = std::move(dense);
  } else if (t.grad) {
    float* out = t.grad->data();
    const float* in = g.data();
    for (std::size_t i = 0, n = g.size(); i < n; ++i) out[i] += in[i];
  } else {
    t.grad = g;
  }
}

void Tensor::accumulate_grad(Array&& g, const char* op) const {
  check_defined(impl_);
  if (!impl_->grad && !impl_->sparse_grad) {
    check_grad_shape(*this, g.shape(), op);
    check_target(*this, *impl_, op);
    impl_->grad = std::move(g);  // the first gradient is adopted, not copied
    return;
  }
  accumulate_grad(static_cast<const Array&>(g), op);
}

namespace {
void check_sparse_fits(const Tensor& t, const RowSparseGrad& g, const char* op) {
  const bool fits = g.dense_shape == t.shape() && g.values.dimension() == 2 &&
                    g.values.shape()[0] == g.indices.size() &&
                    g.values.shape()[1] == (t.shape().size() == 2 ? t.shape()[1] : 0);
  if (!fits)
    fail<AutogradError>(op, ": produced a row-sparse gradient of dense shape ", g.dense_shape,
                        " with values ", g.values.shape(), " for ", t.describe(),
                        "; expected dense shape ", t.shape());
}
}  // namespace

void Tensor::accumulate_grad(RowSparseGrad&& g, const char* op) const {
  check_defined(impl_);
  TensorImpl& t = *impl_;
  const bool nothing_yet = !t.grad && (!t.sparse_grad || t.sparse_grad->indices.size() == 0);
  if (!nothing_yet) return accumulate_grad(static_cast<const RowSparseGrad&>(g), op);
  check_sparse_fits(*this, g, op);
  check_target(*this, t, op);
  t.sparse_grad = std::make_unique<RowSparseGrad>(std::move(g));  // adopted, not copied
}

void Tensor::accumulate_grad(const RowSparseGrad& g, const char* op) const {
  check_defined(impl_);
  check_sparse_fits(*this, g, op);
  check_target(*this, *impl_, op);
  TensorImpl& t = *impl_;
  if (t.grad) {  // dense + row-sparse -> dense, rows scatter-added
    g.add_to(*t.grad);
  } else if (t.sparse_grad) {  // row-sparse + row-sparse -> concatenated
    RowSparseGrad& s = *t.sparse_grad;
    const std::size_t n0 = s.indices.size(), n1 = g.indices.size(), dim = shape()[1];
    IndexArray ids = IndexArray::from_shape({n0 + n1});
    Array values = Array::from_shape({n0 + n1, dim});
    std::copy_n(s.indices.data(), n0, ids.data());
    std::copy_n(g.indices.data(), n1, ids.data() + n0);
    std::copy_n(s.values.data(), n0 * dim, values.data());
    std::copy_n(g.values.data(), n1 * dim, values.data() + n0 * dim);
    s.indices = std::move(ids);
    s.values = std::move(values);
  } else {
    t.sparse_grad = std::make_unique<RowSparseGrad>(g);
  }
}

namespace autograd::detail {
bool take_pending_dense(TensorImpl& t) {
  if (t.sparse_grad) {
    Array dense = t.sparse_grad->to_dense();
    if (t.grad) dense += *t.grad;
    t.grad = std::move(dense);
    t.sparse_grad.reset();
  }
  return t.grad.has_value();
}
void drop_pending(TensorImpl& t) {
  t.grad.reset();
  t.sparse_grad.reset();
}
}  // namespace autograd::detail

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

void Tensor::set_grad(Array g) const {
  check_defined(impl_);
  check_grad_shape(*this, g.shape(), "set_grad");
  impl_->sparse_grad.reset();
  impl_->grad = std::move(g);
}

// ---- backward, clone, detach -----------------------------------------------------------------------

void Tensor::backward(bool retain_graph) const {
  check_defined(impl_);
  check<AutogradError>(numel() == 1,
                       "grad can be implicitly created only for scalar outputs | backward: "
                       "expected a loss with one element, got shape ",
                       shape(), "; reduce it first (ops::sum, ops::mean) or pass grad_output");
  Array seed = Array::from_shape(shape());
  seed.data()[0] = 1.0f;
  autograd::detail::backward(*this, std::move(seed), retain_graph);
}

void Tensor::backward(Array grad_output, bool retain_graph) const {
  check_defined(impl_);
  check<ShapeError>(grad_output.shape() == shape(), "backward: expected grad_output of shape ",
                    shape(), " (the tensor's), got ", grad_output.shape());
  autograd::detail::backward(*this, std::move(grad_output), retain_graph);
}

Tensor Tensor::clone() const {
  // y = x        dx = dy
  Tensor y(data());
  autograd::record("clone", y, {*this}, {},
                   [x = *this](Array dy) { x.accumulate_grad(std::move(dy), "clone"); });
  return y;
}

Tensor Tensor::detach() const {
  check_defined(impl_);
  Tensor out;
  out.impl_ = share_storage(*impl_);  // same data, same version counter, no graph
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
  if (impl_ == nullptr) return "an empty tensor";
  std::ostringstream os;
  if (!impl_->name.empty())
    os << '\'' << impl_->name << "' ";
  else if (!impl_->is_leaf())
    os << "the output of '" << impl_->producer() << "' ";
  else
    os << "tensor ";
  os << str(shape());
  return os.str();
}

// ---- printing --------------------------------------------------------------------------------------

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
