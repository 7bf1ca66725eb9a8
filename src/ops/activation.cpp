// src/ops/activation.cpp
//
// GELU in PyTorch's two forms: the checks and the recording. The maths is in the kernels:
// gelu_reference.cpp (read it first) and gelu_fast.cpp, picked for the CPU by
// kernels::gelu_kernels() (docs/kernels.md). When the op is recorded, the forward pass also writes
// the derivative gelu'(x), kept for backward (one float per element), so backward is one
// multiplication instead of a second evaluation of erf.
//   "none":  y = x * Phi(x) = (x * 0.5) * (1 + erf(x / sqrt 2))       (PyTorch's GeluKernel)
//   "tanh":  y = 0.5 x (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
#include "tapegrad/ops/activation.hpp"

#include <memory>

#include "gelu_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::ops {

Tensor gelu(const Tensor& x, const std::string& approximate) {
  check<ValueError>(approximate == "none" || approximate == "tanh",
                    "approximate argument must be either none or tanh. | ", autograd::where("gelu"),
                    ": expected approximate \"none\" or \"tanh\", got \"", approximate, "\"");
  const bool tanh_form = approximate == "tanh";
  const bool recording = autograd::should_record({x});
  // The set in use's kernels (a static table): backward runs the same set's backward.
  const kernels::GeluKernels* kernel = &kernels::gelu_kernels();
  Array out = Array::from_shape(x.shape());
  auto derivative = std::make_shared<Array>(recording ? Array::from_shape(x.shape()) : Array());
  kernel->forward(x.data().data(), out.data(), recording ? derivative->data() : nullptr, x.numel(),
                  tanh_form);
  Tensor y(std::move(out));
  autograd::record("gelu", y, {x}, /*saved=*/{}, [x, derivative, kernel](Array dy) {
    kernel->backward(dy.data(), derivative->data(), dy.size());  // reads d, not x
    x.accumulate_grad(std::move(dy), "gelu");                    // dy's own buffer has become dx
  });
  return y;
}

}  // namespace tapegrad::ops
