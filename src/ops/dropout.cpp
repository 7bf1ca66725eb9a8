// src/ops/dropout.cpp
//
// Inverted dropout (SPEC 2.7). x: any shape; the mask has x's shape. In training each element
// draws one u24 from the generator, in row-major order, and is kept iff u >= p. Kept elements
// are scaled by 1 / (1 - p) so that E[y] = x: evaluation then needs no rescaling, which is why
// eval mode is the identity. Backward reads only the mask (not x), so nothing is saved.
#include "tapegrad/ops/dropout.hpp"

#include <cmath>
#include <memory>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

void check_dropout_probability(double p) {
  // NaN fails both comparisons: rejected, unlike PyTorch's `p < 0 or p > 1` (SPEC section 3).
  check<ValueError>(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen, bool inplace,
               xt::xarray<std::uint8_t>* mask_out) {
  // m[i] = (u[i] >= p) ? scale : 0        scale = 1.0f / float(1 - p)
  // y = x * m                             dx = dy * m
  // scale is the float reciprocal of the float (1 - p): PyTorch divides a 0/1 float mask by
  // (1 - p), which rounds the same way. p == 1 keeps nothing and draws nothing: y = x * 0, so
  // NaN and Inf inputs give NaN, as in PyTorch.
  check_dropout_probability(p);
  if (!training || p == 0.0 || x.numel() == 0) return x;   // the same tensor, no draw, no entry
  if (inplace && x.is_leaf() && x.requires_grad() && autograd::grad_enabled())
    fail<AutogradError>("a leaf Variable that requires grad is being used in an in-place operation. | ",
                        autograd::where("dropout"), ": ", x.describe(),
                        "; use inplace=false, or run it under NoGradGuard if it is not part of the model");

  const std::size_t n = x.numel();
  auto mask = std::make_shared<xt::xarray<std::uint8_t>>(xt::xarray<std::uint8_t>::from_shape(x.shape()));
  std::uint8_t* keep = mask->data();
  if (p == 1.0) {
    std::fill(keep, keep + n, std::uint8_t{0});
  } else {
    gen.keep_mask(keep, n, p);                             // keep[i] = uniform_float() >= p, in bulk
  }
  const float scale = p == 1.0 ? 0.0f : 1.0f / static_cast<float>(1.0 - p);

  // In place, the result lives in x's storage (one version bump). The tape entry needs an output
  // distinct from its input, so when the op is recorded the result is a new handle on that same
  // storage and version counter (what detach() gives); otherwise it is x itself.
  Tensor y;
  if (inplace) {
    float* data = x.mutable_data().data();
    for (std::size_t i = 0; i < n; ++i) data[i] = data[i] * (keep[i] ? scale : 0.0f);
    y = autograd::should_record({x}) ? x.detach() : x;
  } else {
    Array out = Array::from_shape(x.shape());
    const float* in = x.data().data();
    float* o = out.data();
    for (std::size_t i = 0; i < n; ++i) o[i] = in[i] * (keep[i] ? scale : 0.0f);
    y = Tensor(std::move(out));
  }
  if (mask_out != nullptr) *mask_out = *mask;
  autograd::record("dropout", y, {x}, /*saved=*/{}, [x, mask, scale](const Array& dy) {
    Array dx = Array::from_shape(dy.shape());
    const std::uint8_t* k = mask->data();
    const float* g = dy.data();
    float* d = dx.data();
    for (std::size_t i = 0, m = dx.size(); i < m; ++i) d[i] = g[i] * (k[i] ? scale : 0.0f);
    x.accumulate_grad(std::move(dx), "dropout");
  });
  return y;
}

}  // namespace tapegrad::ops
