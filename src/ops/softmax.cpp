// src/ops/softmax.cpp
//
// softmax and log_softmax along one dimension: the checks and the recording. The maths is in the
// kernels: softmax_reference.cpp (read it first) and softmax_fast.cpp, picked for the CPU by
// kernels::softmax_kernels() (docs/kernels.md). Both subtract the row's max before exp, which
// changes nothing mathematically (the factor e^-max cancels) but keeps exp from overflowing for
// large logits; the denominator is summed in double, in order. Backward reads only the saved
// output y (softmax(x) = exp(log_softmax(x))), so x is not kept. x is seen as (outer, n, inner)
// with n the size of the dimension; along the last dimension inner is 1 (the fast path).
#include "tapegrad/ops/softmax.hpp"

#include "softmax_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"

namespace tapegrad::ops {

namespace {
struct Rows {
  std::size_t outer = 1, n = 1, inner = 1;  // a scalar is one row of one element
};

Rows rows_along(const Shape& s, std::size_t d) {
  Rows r;
  if (s.empty()) return r;
  r.n = s[d];
  for (std::size_t k = 0; k < d; ++k) r.outer *= s[k];
  for (std::size_t k = d + 1; k < s.size(); ++k) r.inner *= s[k];
  return r;
}

Tensor softmax_op(const Tensor& x, std::int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  const std::size_t d = normalize_dim(autograd::where(name), dim, x.dim());
  const Rows r = rows_along(x.shape(), d);
  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::SoftmaxKernels* kernel = &kernels::softmax_kernels();
  Array out = Array::from_shape(x.shape());
  kernel->forward(x.data().data(), out.data(), r.outer, r.n, r.inner, log);
  Tensor y(std::move(out));
  autograd::record(name, y, {x}, {y}, [x, out = y.detach(), r, kernel, log, name](Array dy) {
    Array dx = Array::from_shape(x.shape());
    (log ? kernel->log_softmax_backward : kernel->softmax_backward)(
        out.data().data(), dy.data(), dx.data(), r.outer, r.n, r.inner);
    x.accumulate_grad(std::move(dx), name);
  });
  return y;
}
}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) { return softmax_op(x, dim, /*log=*/false); }

Tensor log_softmax(const Tensor& x, std::int64_t dim) { return softmax_op(x, dim, /*log=*/true); }

}  // namespace tapegrad::ops
