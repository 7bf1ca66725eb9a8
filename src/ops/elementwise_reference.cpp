// src/ops/elementwise_reference.cpp
//
// The elementwise ops' reference kernels: one loop per kernel, the op's formula in a switch
// (docs/kernels.md: read these first). The fast kernels (elementwise_fast.cpp) compute every
// element with the same float operations, but for exp and sigmoid they use tapegrad's
// vectorisable exp_f32 (within 1 ulp of e^x) where these call the C library's exp, so those two
// differ by a float rounding or two (docs/semantics.md#kernel-sets); the other ops give the same
// bits on every set.
#include <cmath>

#include "elementwise_kernels.hpp"

namespace tapegrad::kernels::reference {
namespace {

float apply(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::sub: return a - b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
  }
  return 0.0f;
}

// y = a op b
void binary(BinaryOp op, const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = apply(op, a[i], b[i]);
}

// add: da = dy, db = dy       sub: da = dy, db = -dy
// mul: da = dy * b, db = dy * a       div: da = dy / b, db = -dy * a / b^2
void binary_backward(BinaryOp op, const float* dy, const float* a, const float* b, float* da,
                     float* db, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = dy[i];
    float ga = g, gb = g;
    if (op == BinaryOp::sub) gb = -g;
    if (op == BinaryOp::mul) ga = g * b[i], gb = g * a[i];
    if (op == BinaryOp::div) ga = g / b[i], gb = -g * a[i] / (b[i] * b[i]);
    if (db) db[i] = gb;
    if (da) da[i] = ga;  // after reading dy[i]: da may be dy
  }
}

float apply(UnaryOp op, float a, float c) {
  switch (op) {
    case UnaryOp::add: return a + c;
    case UnaryOp::sub: return a - c;
    case UnaryOp::rsub: return c - a;
    case UnaryOp::mul: return a * c;
    case UnaryOp::div: return a / c;
    case UnaryOp::rdiv: return c / a;
    case UnaryOp::pow: return std::pow(a, c);
    case UnaryOp::neg: return -a;
    case UnaryOp::exp: return std::exp(a);
    case UnaryOp::log: return std::log(a);
    case UnaryOp::sqrt: return std::sqrt(a);
    case UnaryOp::tanh: return std::tanh(a);
    case UnaryOp::relu: return a > 0.0f ? a : 0.0f;
    case UnaryOp::sigmoid: return 1.0f / (1.0f + std::exp(-a));
  }
  return 0.0f;
}

// y = op(a, c)
void unary(UnaryOp op, const float* a, float c, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = apply(op, a[i], c);
}

// da = dy * dy/da, for y = op(a, c)
float chain(UnaryOp op, float g, float a, float y, float c) {
  switch (op) {
    case UnaryOp::add:
    case UnaryOp::sub: return g;
    case UnaryOp::rsub:
    case UnaryOp::neg: return g * -1.0f;
    case UnaryOp::mul: return g * c;
    case UnaryOp::div: return g / c;
    case UnaryOp::rdiv: return g * (-c / (a * a));
    case UnaryOp::pow: return g * (c == 0.0f ? 0.0f : c * std::pow(a, c - 1.0f));  // a^0 = 1
    case UnaryOp::exp: return g * y;
    case UnaryOp::log: return g / a;
    case UnaryOp::sqrt: return g / (2.0f * y);
    case UnaryOp::tanh: return g * (1.0f - y * y);
    case UnaryOp::relu: return g * (y > 0.0f ? 1.0f : 0.0f);
    case UnaryOp::sigmoid: return g * (y * (1.0f - y));
  }
  return 0.0f;
}

void unary_backward(UnaryOp op, const float* a, const float* y, float c, float* dy, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dy[i] = chain(op, dy[i], a ? a[i] : 0.0f, y ? y[i] : 0.0f, c);
}

// y = mask ? value : a        da = mask ? 0 : dy
void masked_fill(const float* a, const bool* mask, float value, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = mask[i] ? value : a[i];
}

}  // namespace

// extern: a const at namespace scope would otherwise be private to this file.
extern const ElementwiseKernels elementwise{binary, binary_backward, unary, unary_backward,
                                            masked_fill};

}  // namespace tapegrad::kernels::reference
