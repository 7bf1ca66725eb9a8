// src/ops/elementwise.cpp
//
// Elementwise ops, each with its formula, forward and backward side by side. Binary ops
// broadcast like NumPy; a value repeated k times in forward receives the SUM of its k incoming
// gradients in backward, which sum_to_shape() computes. Inputs that need no gradient are skipped.
// Same-shape operands (the common case) take a plain loop, split over the threads when large;
// other shapes go through xtensor's broadcasting after broadcast_shapes() has checked them with a
// readable message.
#include "tapegrad/ops/elementwise.hpp"

#include <cmath>

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "../exp_f32.hpp"
#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/ops/broadcast.hpp"

namespace tapegrad::ops {

namespace {
// Elements worth a thread in these loops: each costs about a nanosecond or less, waking a thread
// several microseconds. Every element is computed by one thread in the same way, so the results
// do not depend on the thread count.
constexpr std::size_t kGrain = std::size_t{1} << 15;

// out = f(a, b) elementwise with broadcasting; f works on floats and on xtensor expressions.
template <class F>
Array binary(const char* op, const Array& a, const Array& b, F f) {
  if (a.shape() == b.shape()) {
    Array out = Array::from_shape(a.shape());
    const float *pa = a.data(), *pb = b.data();
    float* po = out.data();
    detail::parallel_for(a.size(), kGrain, [&](std::size_t first, std::size_t last) {
      for (std::size_t i = first; i < last; ++i) po[i] = f(pa[i], pb[i]);
    });
    return out;
  }
  broadcast_shapes(op, a.shape(), b.shape());
  return f(a, b);
}

// out = f(a) elementwise, one pass.
template <class F>
Array unary(const Array& a, F f) {
  Array out = Array::from_shape(a.shape());
  const float* pa = a.data();
  float* po = out.data();
  detail::parallel_for(a.size(), kGrain, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) po[i] = f(pa[i]);
  });
  return out;
}

// dy = dy * f(i) for each element i, in dy's own buffer: the chain rule for the unary ops
// below. dy is the output's pending gradient, which the tape drops afterwards (tape.hpp), so the
// result is then moved on into the input's gradient without a new allocation.
template <class F>
Array&& chain_(Array& dy, F f) {
  float* pd = dy.data();
  detail::parallel_for(dy.size(), kGrain, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) pd[i] = pd[i] * f(i);
  });
  return std::move(dy);
}
}  // namespace

// ---- binary ops ----------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  // y = a + b        da = dy        db = dy        (each summed back to its input's shape)
  Tensor y(binary("add", a.data(), b.data(), [](const auto& x, const auto& z) { return x + z; }));
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
  Tensor y(binary("sub", a.data(), b.data(), [](const auto& x, const auto& z) { return x - z; }));
  autograd::record("sub", y, {a, b}, {}, [a, b](Array dy) {
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(dy, a.shape()), "sub");
    if (b.requires_grad()) b.accumulate_grad(sum_to_shape(Array(-dy), b.shape()), "sub");
  });
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  // y = a * b        da = dy * b        db = dy * a
  Tensor y(binary("mul", a.data(), b.data(), [](const auto& x, const auto& z) { return x * z; }));
  autograd::record("mul", y, {a, b}, {a, b}, [a, b](Array dy) {
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(Array(dy * b.data()), a.shape()), "mul");
    if (b.requires_grad()) b.accumulate_grad(sum_to_shape(Array(dy * a.data()), b.shape()), "mul");
  });
  return y;
}

Tensor div(const Tensor& a, const Tensor& b) {
  // y = a / b        da = dy / b        db = -dy * a / b^2
  Tensor y(binary("div", a.data(), b.data(), [](const auto& x, const auto& z) { return x / z; }));
  autograd::record("div", y, {a, b}, {a, b}, [a, b](Array dy) {
    if (a.requires_grad()) a.accumulate_grad(sum_to_shape(Array(dy / b.data()), a.shape()), "div");
    if (b.requires_grad())
      b.accumulate_grad(sum_to_shape(Array(-dy * a.data() / (b.data() * b.data())), b.shape()),
                        "div");
  });
  return y;
}

// ---- with a scalar (cast to float once, where it meets the data) ------------------------------------

Tensor add(const Tensor& a, double s) {
  // y = a + s        da = dy
  const float c = static_cast<float>(s);
  Tensor y(unary(a.data(), [c](float x) { return x + c; }));
  autograd::record("add", y, {a}, {}, [a](Array dy) { a.accumulate_grad(std::move(dy), "add"); });
  return y;
}

Tensor sub(const Tensor& a, double s) {
  // y = a - s        da = dy
  const float c = static_cast<float>(s);
  Tensor y(unary(a.data(), [c](float x) { return x - c; }));
  autograd::record("sub", y, {a}, {}, [a](Array dy) { a.accumulate_grad(std::move(dy), "sub"); });
  return y;
}

Tensor rsub(const Tensor& a, double s) {
  // y = s - a        da = -dy
  const float c = static_cast<float>(s);
  Tensor y(unary(a.data(), [c](float x) { return c - x; }));
  autograd::record("rsub", y, {a}, {}, [a](Array dy) {
    a.accumulate_grad(chain_(dy, [](std::size_t) { return -1.0f; }),
                      "rsub");  // dy * -1 is exactly -dy
  });
  return y;
}

Tensor mul(const Tensor& a, double s) {
  // y = a * s        da = dy * s
  const float c = static_cast<float>(s);
  Tensor y(unary(a.data(), [c](float x) { return x * c; }));
  autograd::record("mul", y, {a}, {}, [a, c](Array dy) {
    a.accumulate_grad(chain_(dy, [c](std::size_t) { return c; }), "mul");
  });
  return y;
}

Tensor div(const Tensor& a, double s) {
  // y = a / s        da = dy / s
  const float c = static_cast<float>(s);
  Tensor y(unary(a.data(), [c](float x) { return x / c; }));
  autograd::record("div", y, {a}, {}, [a, c](Array dy) {
    float* g = dy.data();
    for (std::size_t i = 0, n = dy.size(); i < n; ++i) g[i] = g[i] / c;
    a.accumulate_grad(std::move(dy), "div");
  });
  return y;
}

Tensor rdiv(const Tensor& a, double s) {
  // y = s / a        da = -dy * s / a^2
  const float c = static_cast<float>(s);
  Tensor y(unary(a.data(), [c](float x) { return c / x; }));
  autograd::record("rdiv", y, {a}, {a}, [a, c](Array dy) {
    const float* x = a.data().data();
    a.accumulate_grad(chain_(dy, [x, c](std::size_t i) { return -c / (x[i] * x[i]); }), "rdiv");
  });
  return y;
}

// ---- unary ops -------------------------------------------------------------------------------------

Tensor neg(const Tensor& a) {
  // y = -a           da = -dy
  Tensor y(unary(a.data(), [](float x) { return -x; }));
  autograd::record("neg", y, {a}, {}, [a](Array dy) {
    a.accumulate_grad(chain_(dy, [](std::size_t) { return -1.0f; }),
                      "neg");  // dy * -1 is exactly -dy
  });
  return y;
}

Tensor exp(const Tensor& a) {
  // y = e^a          da = dy * y
  Tensor y(unary(a.data(), [](float x) { return detail::exp_f32(x); }));
  autograd::record("exp", y, {a}, {y}, [a, out = y.detach()](Array dy) {
    const float* py = out.data().data();
    a.accumulate_grad(chain_(dy, [py](std::size_t i) { return py[i]; }), "exp");
  });
  return y;
}

Tensor log(const Tensor& a) {
  // y = ln a         da = dy / a
  Tensor y(unary(a.data(), [](float x) { return std::log(x); }));
  autograd::record("log", y, {a}, {a}, [a](Array dy) {
    float* g = dy.data();
    const float* x = a.data().data();
    for (std::size_t i = 0, n = dy.size(); i < n; ++i) g[i] = g[i] / x[i];
    a.accumulate_grad(std::move(dy), "log");
  });
  return y;
}

Tensor sqrt(const Tensor& a) {
  // y = sqrt(a)      da = dy / (2 y)
  Tensor y(unary(a.data(), [](float x) { return std::sqrt(x); }));
  autograd::record("sqrt", y, {a}, {y}, [a, out = y.detach()](Array dy) {
    a.accumulate_grad(Array(dy / (2.0f * out.data())), "sqrt");
  });
  return y;
}

Tensor pow(const Tensor& a, double exponent) {
  // y = a^e          da = dy * e * a^(e - 1)
  const float e = static_cast<float>(exponent);
  Tensor y(unary(a.data(), [e](float x) { return std::pow(x, e); }));
  autograd::record("pow", y, {a}, {a}, [a, e](Array dy) {
    const float* x = a.data().data();
    a.accumulate_grad(
        chain_(dy,
               [x, e](std::size_t i) { return e == 0.0f ? 0.0f : e * std::pow(x[i], e - 1.0f); }),
        "pow");
  });
  return y;
}

Tensor tanh(const Tensor& a) {
  // y = tanh(a)      da = dy * (1 - y^2)
  Tensor y(unary(a.data(), [](float x) { return std::tanh(x); }));
  autograd::record("tanh", y, {a}, {y}, [a, out = y.detach()](Array dy) {
    const float* py = out.data().data();
    a.accumulate_grad(chain_(dy, [py](std::size_t i) { return 1.0f - py[i] * py[i]; }), "tanh");
  });
  return y;
}

Tensor relu(const Tensor& a) {
  // y = max(a, 0)    da = dy where a > 0, else 0
  Tensor y(unary(a.data(), [](float x) { return x > 0.0f ? x : 0.0f; }));
  autograd::record("relu", y, {a}, {y}, [a, out = y.detach()](Array dy) {
    const float* py = out.data().data();
    a.accumulate_grad(chain_(dy, [py](std::size_t i) { return py[i] > 0.0f ? 1.0f : 0.0f; }),
                      "relu");
  });
  return y;
}

Tensor sigmoid(const Tensor& a) {
  // y = 1 / (1 + e^-a)    da = dy * y * (1 - y)
  Tensor y(unary(a.data(), [](float x) { return 1.0f / (1.0f + detail::exp_f32(-x)); }));
  autograd::record("sigmoid", y, {a}, {y}, [a, out = y.detach()](Array dy) {
    const float* py = out.data().data();
    a.accumulate_grad(chain_(dy, [py](std::size_t i) { return py[i] * (1.0f - py[i]); }),
                      "sigmoid");
  });
  return y;
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
  Array out = a.data();
  for (std::size_t i = 0, n = out.size(); i < n; ++i)
    if (full_mask->data()[i]) out.data()[i] = v;
  Tensor y(std::move(out));
  autograd::record("masked_fill", y, {a}, {}, [a, full_mask](Array dy) {
    Array da = dy;
    for (std::size_t i = 0, n = da.size(); i < n; ++i)
      if (full_mask->data()[i]) da.data()[i] = 0.0f;
    a.accumulate_grad(std::move(da), "masked_fill");
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
