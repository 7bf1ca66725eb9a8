// src/ops/elementwise_kernels.hpp (private)
//
// The elementwise ops' kernels: the references are defined in elementwise.cpp, their fast
// versions in src/kernels/elementwise.cpp (src/core/dispatch.hpp). Many small ops share two loop
// shapes, so four of the kernels take the op to run as an enum. The ops (elementwise.cpp) check,
// allocate, call them, and record backwards that call the same set's. Binary kernels see operands
// of one shape (the op broadcasts other shapes itself); every pointer holds n floats.
#pragma once

#include <cmath>
#include <cstddef>

#include "../core/dispatch.hpp"

namespace tapegrad::kernels {

enum class BinaryOp { add, sub, mul, div };  ///< y = a + b, a - b, a * b, a / b

/// y = f(a) with an optional scalar c: the ops with a scalar (a + c, a - c, c - a, a * c, a / c,
/// c / a, a ^ c) and the unary ops (c unused).
enum class UnaryOp {
  add,
  sub,
  rsub,
  mul,
  div,
  rdiv,
  pow,
  neg,
  exp,
  log,
  sqrt,
  tanh,
  relu,
  sigmoid
};

/// a ^ c as PyTorch computes it: the exponents it special-cases run as the operation they stand
/// for (0.5: sqrt, -0.5: 1 / sqrt, 2: a a, 3: a a a, -1: 1 / a, -2: 1 / (a a)), which differ from
/// std::pow at -0 and -inf (pow(-inf, 0.5) is +inf, sqrt(-inf) NaN) and in the last bit. The
/// backward is c a ^ (c - 1) through the same function, as PyTorch's. Static: each kernel set
/// keeps a copy compiled with its own instructions.
static inline float torch_pow(float a, float c) {
  if (c == 0.5f) return std::sqrt(a);
  if (c == -0.5f) return 1.0f / std::sqrt(a);
  if (c == 2.0f) return a * a;
  if (c == 3.0f) return a * a * a;
  if (c == -1.0f) return 1.0f / a;
  if (c == -2.0f) return 1.0f / (a * a);
  return std::pow(a, c);
}

}  // namespace tapegrad::kernels

namespace tapegrad::ops {

using kernels::BinaryOp;
using kernels::UnaryOp;

/// y = a op b (y may be a or b).
void elementwise_binary(BinaryOp op, const float* a, const float* b, float* y, std::size_t n);
/// da and db from dy (each written, not added; a null one is not computed). da may be dy
/// itself: each dy[i] is read before da[i] is written. add has nothing to compute.
void elementwise_binary_backward(BinaryOp op, const float* dy, const float* a, const float* b,
                                 float* da, float* db, std::size_t n);
/// y = op(a, c).
void elementwise_unary(UnaryOp op, const float* a, float c, float* y, std::size_t n);
/// dy = dy * dy/da in place (dy becomes da), from the forward's input a and output y (each
/// read only by the ops whose derivative needs it, may be null otherwise).
void elementwise_unary_backward(UnaryOp op, const float* a, const float* y, float c, float* dy,
                                std::size_t n);
/// y = mask ? value : a (y may be a). Its backward is the same with value 0, on dy.
void elementwise_masked_fill(const float* a, const bool* mask, float value, float* y,
                             std::size_t n);

}  // namespace tapegrad::ops
