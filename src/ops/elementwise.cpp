// src/ops/elementwise.cpp
//
// Elementwise ops: the checks and the recording, each with its formula, forward and backward side
// by side. The loops are in the kernels: elementwise_reference.cpp (read it first) and
// elementwise_fast.cpp, picked for the CPU by kernels::elementwise_kernels() (docs/kernels.md);
// each backward calls the table its forward used. Binary ops broadcast like NumPy; a value
// repeated k times in forward receives the SUM of its k incoming gradients in backward, which
// sum_to_shape() computes. Inputs that need no gradient are skipped. Same-shape operands (the
// common case) go through the kernels; other shapes go through xtensor's broadcasting after
// broadcast_shapes() has checked them with a readable message.
#include "tapegrad/ops/elementwise.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "elementwise_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"

namespace tapegrad::ops {

namespace {
using kernels::BinaryOp;
using kernels::ElementwiseKernels;
using kernels::UnaryOp;

// The set in use's kernels (a static table): a backward runs the same set's kernels.
const ElementwiseKernels* kernels_in_use() { return &kernels::elementwise_kernels(); }

// out = a op b, elementwise with broadcasting; f computes it on xtensor expressions.
template <class F>
Array binary(const char* name, BinaryOp op, const Array& a, const Array& b, F f) {
  if (a.shape() == b.shape()) {
    Array out = Array::from_shape(a.shape());
    kernels_in_use()->binary(op, a.data(), b.data(), out.data(), a.size());
    return out;
  }
  broadcast_shapes(name, a.shape(), b.shape());
  return f(a, b);
}

// The gradients of a binary op whose operands and output have one shape: dy's own buffer becomes
// a's gradient (it is the output's pending gradient, which the tape drops afterwards).
void same_shape_backward(const ElementwiseKernels* kernel, BinaryOp op, const char* name,
                         const Tensor& a, const Tensor& b, Array dy) {
  const bool want_a = a.requires_grad(), want_b = b.requires_grad();
  Array db = want_b ? Array::from_shape(dy.shape()) : Array();
  kernel->binary_backward(op, dy.data(), a.data().data(), b.data().data(),
                          want_a ? dy.data() : nullptr, want_b ? db.data() : nullptr, dy.size());
  if (want_a) a.accumulate_grad(std::move(dy), name);
  if (want_b) b.accumulate_grad(std::move(db), name);
}

bool same_shapes(const Array& dy, const Tensor& a, const Tensor& b) {
  return dy.shape() == a.shape() && dy.shape() == b.shape();
}

// What a unary op's backward reads: its derivative is a function of the input a (log, pow,
// rdiv), of the output y (exp, sqrt, tanh, relu, sigmoid), or of neither.
enum class Saves { nothing, input, output };

// y = op(a, c), elementwise, recorded with a backward that computes dy * dy/da in dy's buffer
// through the same kernels.
Tensor unary(const char* name, UnaryOp op, const Tensor& a, float c = 0.0f,
             Saves saves = Saves::nothing) {
  const ElementwiseKernels* kernel = kernels_in_use();
  Array out = Array::from_shape(a.shape());
  kernel->unary(op, a.data().data(), c, out.data(), a.numel());
  Tensor y(std::move(out));
  std::vector<Tensor> saved;
  if (saves == Saves::input) saved.push_back(a);
  if (saves == Saves::output) saved.push_back(y);
  const Tensor kept = saves == Saves::output ? y.detach() : Tensor();  // not y: a cycle
  autograd::record(name, y, {a}, saved, [=](Array dy) {
    kernel->unary_backward(op, saves == Saves::input ? a.data().data() : nullptr,
                           saves == Saves::output ? kept.data().data() : nullptr, c, dy.data(),
                           dy.size());
    a.accumulate_grad(std::move(dy), name);
  });
  return y;
}
}  // namespace

// ---- binary ops ----------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  // y = a + b        da = dy        db = dy        (each summed back to its input's shape)
  Tensor y(binary("add", BinaryOp::add, a.data(), b.data(),
                  [](const auto& x, const auto& z) { return x + z; }));
  autograd::record("add", y, {a, b}, {}, [a, b](Array dy) {
    // b gets a copy (or its broadcast sum); a then takes dy's own buffer when the shapes agree.
    if (b.requires_grad()) b.accumulate_grad(sum_to_shape(dy, b.shape()), "add");
    if (a.requires_grad())
      a.accumulate_grad(a.shape() == dy.shape() ? std::move(dy) : sum_to_shape(dy, a.shape()),
                        "add");
  });
  return y;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  // y = a - b        da = dy        db = -dy
  Tensor y(binary("sub", BinaryOp::sub, a.data(), b.data(),
                  [](const auto& x, const auto& z) { return x - z; }));
  autograd::record("sub", y, {a, b}, {}, [a, b, kernel = kernels_in_use()](Array dy) {
    if (same_shapes(dy, a, b)) return same_shape_backward(kernel, BinaryOp::sub, "sub", a, b, dy);
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(dy, a.shape()), "sub");
    if (b.requires_grad()) b.accumulate_grad(sum_to_shape(Array(-dy), b.shape()), "sub");
  });
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  // y = a * b        da = dy * b        db = dy * a
  Tensor y(binary("mul", BinaryOp::mul, a.data(), b.data(),
                  [](const auto& x, const auto& z) { return x * z; }));
  autograd::record("mul", y, {a, b}, {a, b}, [a, b, kernel = kernels_in_use()](Array dy) {
    if (same_shapes(dy, a, b)) return same_shape_backward(kernel, BinaryOp::mul, "mul", a, b, dy);
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(Array(dy * b.data()), a.shape()), "mul");
    if (b.requires_grad()) b.accumulate_grad(sum_to_shape(Array(dy * a.data()), b.shape()), "mul");
  });
  return y;
}

Tensor div(const Tensor& a, const Tensor& b) {
  // y = a / b        da = dy / b        db = -dy * a / b^2
  Tensor y(binary("div", BinaryOp::div, a.data(), b.data(),
                  [](const auto& x, const auto& z) { return x / z; }));
  autograd::record("div", y, {a, b}, {a, b}, [a, b, kernel = kernels_in_use()](Array dy) {
    if (same_shapes(dy, a, b)) return same_shape_backward(kernel, BinaryOp::div, "div", a, b, dy);
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(Array(dy / b.data()), a.shape()), "div");
    if (b.requires_grad())
      b.accumulate_grad(sum_to_shape(Array(-dy * a.data() / (b.data() * b.data())), b.shape()),
                        "div");
  });
  return y;
}

// ---- with a scalar (cast to float once, where it meets the data) ------------------------------------
// (the formulas of forward and backward: elementwise_reference.cpp)

// y = a + s        da = dy
Tensor add(const Tensor& a, double s) { return unary("add", UnaryOp::add, a, float(s)); }
// y = a - s        da = dy
Tensor sub(const Tensor& a, double s) { return unary("sub", UnaryOp::sub, a, float(s)); }
// y = s - a        da = -dy
Tensor rsub(const Tensor& a, double s) { return unary("rsub", UnaryOp::rsub, a, float(s)); }
// y = a * s        da = dy * s
Tensor mul(const Tensor& a, double s) { return unary("mul", UnaryOp::mul, a, float(s)); }
// y = a / s        da = dy / s
Tensor div(const Tensor& a, double s) { return unary("div", UnaryOp::div, a, float(s)); }
// y = s / a        da = -dy * s / a^2
Tensor rdiv(const Tensor& a, double s) {
  return unary("rdiv", UnaryOp::rdiv, a, float(s), Saves::input);
}
// y = a^e          da = dy * e * a^(e - 1)
Tensor pow(const Tensor& a, double exponent) {
  return unary("pow", UnaryOp::pow, a, float(exponent), Saves::input);
}

// ---- unary ops -------------------------------------------------------------------------------------

// y = -a           da = -dy
Tensor neg(const Tensor& a) { return unary("neg", UnaryOp::neg, a); }
// y = e^a          da = dy * y
Tensor exp(const Tensor& a) { return unary("exp", UnaryOp::exp, a, 0.0f, Saves::output); }
// y = ln a         da = dy / a
Tensor log(const Tensor& a) { return unary("log", UnaryOp::log, a, 0.0f, Saves::input); }
// y = sqrt(a)      da = dy / (2 y)
Tensor sqrt(const Tensor& a) { return unary("sqrt", UnaryOp::sqrt, a, 0.0f, Saves::output); }
// y = tanh(a)      da = dy * (1 - y^2)
Tensor tanh(const Tensor& a) { return unary("tanh", UnaryOp::tanh, a, 0.0f, Saves::output); }
// y = max(a, 0)    da = dy where a > 0, else 0
Tensor relu(const Tensor& a) { return unary("relu", UnaryOp::relu, a, 0.0f, Saves::output); }
// y = 1 / (1 + e^-a)    da = dy * y * (1 - y)
Tensor sigmoid(const Tensor& a) {
  return unary("sigmoid", UnaryOp::sigmoid, a, 0.0f, Saves::output);
}

Tensor masked_fill(const Tensor& a, const Mask& mask, double value) {
  // y = mask ? value : a       da = mask ? 0 : dy        (mask broadcasts to a's shape)
  const std::string where = autograd::where("masked_fill");
  const Shape& s = a.shape();
  const Shape& m = mask.shape();
  bool fits = m.size() <= s.size();
  for (std::size_t i = 0; fits && i < m.size(); ++i) {
    const std::size_t dm = m[m.size() - 1 - i], ds = s[s.size() - 1 - i];
    fits = dm == ds || dm == 1;
  }
  check<ShapeError>(fits, "The size of the mask must be broadcastable to the size of the tensor | ",
                    where, ": mask of shape ", m, " does not broadcast to the tensor's shape ", s);
  const float v = static_cast<float>(value);
  const auto full_mask = std::make_shared<const xt::xarray<bool>>(xt::broadcast(mask, s));
  const ElementwiseKernels* kernel = kernels_in_use();
  Array out = Array::from_shape(s);
  kernel->masked_fill(a.data().data(), full_mask->data(), v, out.data(), out.size());
  Tensor y(std::move(out));
  autograd::record("masked_fill", y, {a}, {}, [a, full_mask, kernel](Array dy) {
    kernel->masked_fill(dy.data(), full_mask->data(), 0.0f, dy.data(), dy.size());  // dy becomes da
    a.accumulate_grad(std::move(dy), "masked_fill");
  });
  return y;
}

}  // namespace tapegrad::ops

namespace tapegrad {

Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
Tensor operator+(const Tensor& a, double s) { return ops::add(a, s); }
Tensor operator+(double s, const Tensor& a) { return ops::add(a, s); }
Tensor operator-(const Tensor& a, double s) { return ops::sub(a, s); }
Tensor operator-(double s, const Tensor& a) { return ops::rsub(a, s); }
Tensor operator*(const Tensor& a, double s) { return ops::mul(a, s); }
Tensor operator*(double s, const Tensor& a) { return ops::mul(a, s); }
Tensor operator/(const Tensor& a, double s) { return ops::div(a, s); }
Tensor operator/(double s, const Tensor& a) { return ops::rdiv(a, s); }
Tensor operator-(const Tensor& a) { return ops::neg(a); }

}  // namespace tapegrad
