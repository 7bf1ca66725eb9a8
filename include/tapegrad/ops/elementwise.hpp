// include/tapegrad/ops/elementwise.hpp
//
// Elementwise ops. Binary ops broadcast like NumPy (ops/broadcast.hpp); scalars are given as
// double and cast to float once, where they meet the data, as PyTorch does with Python numbers.
// Each op's forward and backward sit side by side in src/ops/elementwise.cpp.
#pragma once

#include <xtensor/xarray.hpp>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

/// A boolean mask (true = fill), broadcast against the tensor it masks.
using Mask = xt::xarray<bool>;

namespace ops {

Tensor add(const Tensor& a, const Tensor& b);  ///< a + b
Tensor sub(const Tensor& a, const Tensor& b);  ///< a - b
Tensor mul(const Tensor& a, const Tensor& b);  ///< a * b
Tensor div(const Tensor& a, const Tensor& b);  ///< a / b
Tensor add(const Tensor& a, double s);         ///< a + s
Tensor sub(const Tensor& a, double s);         ///< a - s
Tensor rsub(const Tensor& a, double s);        ///< s - a
Tensor mul(const Tensor& a, double s);         ///< a * s
Tensor div(const Tensor& a, double s);         ///< a / s
Tensor rdiv(const Tensor& a, double s);        ///< s / a
Tensor neg(const Tensor& a);                   ///< -a
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor pow(const Tensor& a, double exponent);  ///< a ^ exponent
Tensor tanh(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor sigmoid(const Tensor& a);
/// a where mask is false, `value` where it is true; mask broadcasts to a's shape (not beyond).
Tensor masked_fill(const Tensor& a, const Mask& mask, double value);

}  // namespace ops

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double s);
Tensor operator+(double s, const Tensor& a);
Tensor operator-(const Tensor& a, double s);
Tensor operator-(double s, const Tensor& a);
Tensor operator*(const Tensor& a, double s);
Tensor operator*(double s, const Tensor& a);
Tensor operator/(const Tensor& a, double s);
Tensor operator/(double s, const Tensor& a);
Tensor operator-(const Tensor& a);

}  // namespace tapegrad
