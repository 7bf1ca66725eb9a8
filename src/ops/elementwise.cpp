// src/ops/elementwise.cpp
//
// Elementwise ops: the checks and the recording, each with its formula, forward and backward side
// by side. The loops are in the reference kernels below (read them first); their fast versions
// in src/kernels/elementwise.cpp are picked for the CPU by kernels::pick (docs/kernels.md), and
// each backward calls the set its forward used. Binary ops broadcast like NumPy; a value
// repeated k times in forward receives the SUM of its k incoming gradients in backward, which
// sum_to_shape() computes. Inputs that need no gradient are skipped. Same-shape operands (the
// common case) go through the kernels; other shapes go through xtensor's broadcasting after
// broadcast_shapes() has checked them with a readable message.
#include "tapegrad/ops/elementwise.hpp"

#include <cmath>

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "elementwise_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"

namespace tapegrad::ops {

// ---- the reference kernels ----------------------------------------------------------------------
// One loop per kernel, the op's formula in a switch. The fast versions compute every element with
// the same float operations, but for exp and sigmoid they use tapegrad's vectorisable exp_f32
// (within 1 ulp of e^x) where these call the C library's exp, so those two differ by a float
// rounding or two (docs/semantics.md#kernel-sets); the other ops give the same bits on every set.

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

float apply(UnaryOp op, float a, float c) {
  switch (op) {
    case UnaryOp::add: return a + c;
    case UnaryOp::sub: return a - c;
    case UnaryOp::rsub: return c - a;
    case UnaryOp::mul: return a * c;
    case UnaryOp::div: return a / c;
    case UnaryOp::rdiv: return c / a;
    case UnaryOp::pow: return kernels::torch_pow(a, c);
    case UnaryOp::neg: return -a;
    case UnaryOp::exp: return std::exp(a);
    case UnaryOp::log: return std::log(a);
    case UnaryOp::sqrt: return std::sqrt(a);
    case UnaryOp::tanh: return std::tanh(a);
    case UnaryOp::relu: return a <= 0.0f ? 0.0f : a;  // NaN stays NaN, as in PyTorch
    case UnaryOp::sigmoid: return 1.0f / (1.0f + std::exp(-a));
  }
  return 0.0f;
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
    case UnaryOp::pow:
      return c == 0.0f ? 0.0f : g * (c * kernels::torch_pow(a, c - 1.0f));  // a^0 = 1
    case UnaryOp::exp: return g * y;
    case UnaryOp::log: return g / a;
    case UnaryOp::sqrt: return g / (2.0f * y);
    case UnaryOp::tanh: return g * (1.0f - y * y);
    case UnaryOp::relu: return y <= 0.0f ? 0.0f : g;  // PyTorch's threshold_backward: NaN passes g
    case UnaryOp::sigmoid: return g * (y * (1.0f - y));
  }
  return 0.0f;
}
}  // namespace

// y = a op b
void elementwise_binary(BinaryOp op, const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = apply(op, a[i], b[i]);
}

// add: da = dy, db = dy       sub: da = dy, db = -dy
// mul: da = dy * b, db = dy * a       div: da = dy / b, db = -dy * a / b^2
void elementwise_binary_backward(BinaryOp op, const float* dy, const float* a, const float* b,
                                 float* da, float* db, std::size_t n) {
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

// y = op(a, c)
void elementwise_unary(UnaryOp op, const float* a, float c, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = apply(op, a[i], c);
}

void elementwise_unary_backward(UnaryOp op, const float* a, const float* y, float c, float* dy,
                                std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dy[i] = chain(op, dy[i], a ? a[i] : 0.0f, y ? y[i] : 0.0f, c);
}

// y = mask ? value : a        da = mask ? 0 : dy
void elementwise_masked_fill(const float* a, const bool* mask, float value, float* y,
                             std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = mask[i] ? value : a[i];
}

// ---- the op -------------------------------------------------------------------------------------

namespace {
// The set in use's binary backward, picked at the forward: backward runs the same set's.
decltype(&elementwise_binary_backward) binary_backward_in_use() {
  return kernels::pick<elementwise_binary_backward>();
}

// out = a op b, elementwise with broadcasting; f computes it on xtensor expressions.
template <class F>
Array binary(const char* name, BinaryOp op, const Array& a, const Array& b, F f) {
  if (a.shape() == b.shape()) {
    Array out = Array::from_shape(a.shape());
    kernels::pick<elementwise_binary>()(op, a.data(), b.data(), out.data(), a.size());
    return out;
  }
  broadcast_shapes(name, a.shape(), b.shape());
  return f(a, b);
}

// The gradients of a binary op whose operands and output have one shape: dy's own buffer becomes
// a's gradient (it is the output's pending gradient, which the tape drops afterwards).
void same_shape_backward(decltype(&elementwise_binary_backward) backward, BinaryOp op,
                         const char* name, const Tensor& a, const Tensor& b, Array dy) {
  const bool want_a = a.requires_grad(), want_b = b.requires_grad();
  Array db = want_b ? Array::from_shape(dy.shape()) : Array();
  const bool reads_inputs = op != BinaryOp::sub;  // sub's a and b may be edges: never read
  backward(op, dy.data(), reads_inputs ? a.data().data() : nullptr,
           reads_inputs ? b.data().data() : nullptr, want_a ? dy.data() : nullptr,
           want_b ? db.data() : nullptr, dy.size());
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
  const auto backward = kernels::pick<elementwise_unary_backward>();
  Array out = Array::from_shape(a.shape());
  kernels::pick<elementwise_unary>()(op, a.data().data(), c, out.data(), a.numel());
  Tensor y(std::move(out));
  std::vector<Tensor> saved;
  if (saves == Saves::input) saved.push_back(a);
  if (saves == Saves::output) saved.push_back(y);
  const Tensor kept = saves == Saves::output ? y.detach() : Tensor();  // not y: a cycle
  autograd::record(name, y, {a}, saved, [=, a = saves == Saves::input ? a : a.edge()](Array dy) {
    backward(op, saves == Saves::input ? a.data().data() : nullptr,
             saves == Saves::output ? kept.data().data() : nullptr, c, dy.data(), dy.size());
    a.accumulate_grad(std::move(dy), name);
  });
  return y;
}
}  // namespace

// ---- binary ops ---------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  // y = a + b        da = dy        db = dy        (each summed back to its input's shape)
  Tensor y(binary("add", BinaryOp::add, a.data(), b.data(),
                  [](const auto& x, const auto& z) { return x + z; }));
  autograd::record("add", y, {a, b}, {}, [a = a.edge(), b = b.edge()](Array dy) {
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
  autograd::record("sub", y, {a, b}, {},
                   [a = a.edge(), b = b.edge(), backward = binary_backward_in_use()](Array dy) {
                     if (same_shapes(dy, a, b))
                       return same_shape_backward(backward, BinaryOp::sub, "sub", a, b, dy);
                     if (a.requires_grad()) a.accumulate_grad(sum_to_shape(dy, a.shape()), "sub");
                     if (b.requires_grad())
                       b.accumulate_grad(sum_to_shape(Array(-dy), b.shape()), "sub");
                   });
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  // y = a * b        da = dy * b        db = dy * a
  Tensor y(binary("mul", BinaryOp::mul, a.data(), b.data(),
                  [](const auto& x, const auto& z) { return x * z; }));
  autograd::record("mul", y, {a, b}, {a, b}, [a, b, backward = binary_backward_in_use()](Array dy) {
    if (same_shapes(dy, a, b)) return same_shape_backward(backward, BinaryOp::mul, "mul", a, b, dy);
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(Array(dy * b.data()), a.shape()), "mul");
    if (b.requires_grad()) b.accumulate_grad(sum_to_shape(Array(dy * a.data()), b.shape()), "mul");
  });
  return y;
}

Tensor div(const Tensor& a, const Tensor& b) {
  // y = a / b        da = dy / b        db = -dy * a / b^2
  Tensor y(binary("div", BinaryOp::div, a.data(), b.data(),
                  [](const auto& x, const auto& z) { return x / z; }));
  autograd::record("div", y, {a, b}, {a, b}, [a, b, backward = binary_backward_in_use()](Array dy) {
    if (same_shapes(dy, a, b)) return same_shape_backward(backward, BinaryOp::div, "div", a, b, dy);
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(Array(dy / b.data()), a.shape()), "div");
    if (b.requires_grad())
      b.accumulate_grad(sum_to_shape(Array(-dy * a.data() / (b.data() * b.data())), b.shape()),
                        "div");
  });
  return y;
}

// ---- with a scalar (cast to float once, where it meets the data) --------------------------------
// (the formulas of forward and backward: the reference kernels above)

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

// ---- unary ops ----------------------------------------------------------------------------------

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
  const auto masked_fill = kernels::pick<elementwise_masked_fill>();
  Array out = Array::from_shape(s);
  masked_fill(a.data().data(), full_mask->data(), v, out.data(), out.size());
  Tensor y(std::move(out));
  autograd::record("masked_fill", y, {a}, {}, [a = a.edge(), full_mask, masked_fill](Array dy) {
    masked_fill(dy.data(), full_mask->data(), 0.0f, dy.data(), dy.size());  // dy becomes da
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
