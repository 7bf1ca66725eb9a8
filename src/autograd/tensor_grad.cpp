// src/autograd/tensor_grad.cpp
//
// The Tensor's autograd side: gradient accumulation (the table of
// docs/semantics.md#gradients-dense-and-row-sparse), backward's entry point and clone. They are
// Tensor's member functions, defined here rather than in src/core/tensor.cpp because they call the
// engine: the core's floors point one way (tensor <- autograd <- ops <- kernels, docs/layers.md).
#include <algorithm>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

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
  if (autograd::detail::active_trace != nullptr) autograd::detail::trace_added(t, g);
}

void Tensor::accumulate_grad(Array&& g, const char* op) const {
  check_defined(impl_);
  if (!impl_->grad && !impl_->sparse_grad) {
    check_grad_shape(*this, g.shape(), op);
    check_target(*this, *impl_, op);
    impl_->grad = std::move(g);  // the first gradient is adopted, not copied
    if (autograd::detail::active_trace != nullptr)
      autograd::detail::trace_added(*impl_, *impl_->grad);
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
  if (autograd::detail::active_trace != nullptr) autograd::detail::trace_added(t, *t.sparse_grad);
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
  if (autograd::detail::active_trace != nullptr) autograd::detail::trace_added(t, g);
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

void Tensor::set_grad(Array g) const {
  check_defined(impl_);
  check_grad_shape(*this, g.shape(), "set_grad");
  impl_->sparse_grad.reset();
  impl_->grad = std::move(g);
}

// ---- backward, clone, detach --------------------------------------------------------------------

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

}  // namespace tapegrad
