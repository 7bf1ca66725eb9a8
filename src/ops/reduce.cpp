// src/ops/reduce.cpp
//
// Reductions. Sums accumulate in double, sequentially in row-major order, so they are
// reproducible bit for bit and accurate for the long sums of a loss.
#include "tapegrad/ops/reduce.hpp"

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

Tensor sum(const Tensor& a) {
  // y = sum_i a_i            da_i = dy
  double total = 0.0;
  for (float v : a.data()) total += v;
  Array out = Array::from_shape({});
  out() = static_cast<float>(total);
  Tensor y(std::move(out));
  autograd::record("sum", y, {a}, {}, [a](const Array& dy) {
    Array da = Array::from_shape(a.shape());
    da.fill(dy());
    a.accumulate_grad(std::move(da), "sum");
  });
  return y;
}

Tensor mean(const Tensor& a) {
  // y = sum_i a_i / n        da_i = dy / n
  double total = 0.0;
  for (float v : a.data()) total += v;
  const double n = static_cast<double>(a.numel());
  Array out = Array::from_shape({});
  out() = static_cast<float>(total / n);
  Tensor y(std::move(out));
  autograd::record("mean", y, {a}, {}, [a, n](const Array& dy) {
    Array da = Array::from_shape(a.shape());
    da.fill(static_cast<float>(double(dy()) / n));
    a.accumulate_grad(std::move(da), "mean");
  });
  return y;
}

}  // namespace tapegrad::ops
