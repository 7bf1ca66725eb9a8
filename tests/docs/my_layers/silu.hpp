// tests/docs/my_layers/silu.hpp: the out-of-tree layer of examples/README.md ("Writing a layer
// out of tree"), kept here so that it compiles and its test (tests/docs/test_my_silu.cpp) runs.
// In your project it is include/my_layers/silu.hpp, and it uses nothing but the public headers.
//   s = 1 / (1 + exp(-x))      y = x * s      dx = dy * (s + x * s * (1 - s))
#pragma once
#include <cmath>
#include <cstdint>
#include <utility>

#include <tapegrad/tapegrad.hpp>

namespace my {
using tapegrad::Array;
using tapegrad::Tensor;

inline Tensor silu(const Tensor& x) {
  const float* xs = x.data().data();
  Array s = Array::from_shape(x.shape()), out = Array::from_shape(x.shape());
  for (std::size_t i = 0; i < s.size(); ++i) {
    s.data()[i] = 1.0f / (1.0f + std::exp(-xs[i]));
    out.data()[i] = xs[i] * s.data()[i];
  }
  Tensor y(std::move(out));
  tapegrad::autograd::record("silu", y, {x}, /*saved=*/{x}, [x, s = std::move(s)](Array dy) {
    const float* xv = x.data().data();       // x's values when backward runs (saved: checked unchanged)
    for (std::size_t i = 0; i < dy.size(); ++i) dy.data()[i] *= s.data()[i] * (1.0f + xv[i] * (1.0f - s.data()[i]));
    x.accumulate_grad(std::move(dy), "silu");   // checks the shape, names the op on a mismatch
  });
  return y;
}

/// y = silu(x) * weight, a learned gain per feature: x (*, features) -> the same shape.
class ScaledSiLU : public tapegrad::nn::Module {
 public:
  explicit ScaledSiLU(std::int64_t features) : features_(features) {
    tapegrad::check<tapegrad::ValueError>(features > 0, "ScaledSiLU: expected features > 0, got ", features);
    weight = register_parameter("weight", tapegrad::Parameter(Array(xt::ones<float>({std::size_t(features)}))));
  }
  Tensor forward(const Tensor& x) {
    tapegrad::autograd::ModuleScope scope(type_name(), path());   // errors name "ScaledSiLU 'path'"
    tapegrad::check<tapegrad::ShapeError>(x.dim() >= 1 && x.shape().back() == std::size_t(features_),
                                          tapegrad::autograd::where("scaled_silu"), ": expected x of shape (*, ",
                                          features_, "), got ", x.shape());
    return silu(x) * weight;
  }
  std::string type_name() const override { return "ScaledSiLU"; }

  tapegrad::Parameter weight;

 private:
  std::int64_t features_;
};
}  // namespace my
