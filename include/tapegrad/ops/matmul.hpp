// include/tapegrad/ops/matmul.hpp
//
// Matrix products through OpenBLAS (src/ops/matmul.cpp is the only file that includes
// xtensor-blas / cblas). A side that needs no gradient costs no work in backward.
#pragma once

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// (n, k) @ (k, m) -> (n, m); (b, n, k) @ (b, k, m) -> (b, n, m) batched;
/// (..., n, k) @ (k, m) -> (..., n, m) (leading dimensions folded into the rows).
/// A size mismatch is ShapeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5) | ...");
/// batch sizes must be equal (no broadcasting of a batch of 1).
Tensor matmul(const Tensor& a, const Tensor& b);

/// y = x W^T + b: x (*, in), weight (out, in), bias (out) or undefined -> (*, out).
/// PyTorch's F.linear, as one op: dx = dy W, dW = dy^T x, db = sum of dy over leading dims.
/// A wrong last dim of x is ShapeError("mat1 and mat2 shapes cannot be multiplied ... | Linear 'out': ...").
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace tapegrad::ops
