// include/tapegrad/autograd/gradcheck.hpp
//
// gradcheck: does an op's backward agree with finite differences of its forward?
// (PyTorch's torch.autograd.gradcheck; docs/semantics.md#gradcheck)
// It scalarises the output with a fixed random weighting R, L(x) = sum(R * fn(x)) accumulated
// in double, takes the analytic gradient of L by backward(), and the numeric one by central
// differences, (L(x + eps) - L(x - eps)) / (2 eps), one input element at a time. It passes when
// |numeric - analytic| <= atol + rtol * |analytic| for every element. The defaults suit float32
// and inputs of up to ~100 elements with values of order 1; everything is seeded, so a check
// either always passes or always fails.
//
//     auto r = gradcheck([](const std::vector<Tensor>& x) { return ops::tanh(x[0]); }, {x});
//     CHECK_MESSAGE(r.ok, r);     // on failure: input, index, analytic and numeric values
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad {

struct GradcheckOptions {
  double eps = 1e-2;  ///< central-difference step
  double atol = 1e-3;
  double rtol = 1e-2;
  std::uint64_t seed = 0;  ///< of the output weighting R
};

struct GradcheckResult {
  bool ok = true;
  std::size_t checked = 0;  ///< elements compared
  // The worst element (largest |numeric - analytic| - rtol * |analytic|):
  std::size_t input = 0;  ///< which input
  std::string index;      ///< its multi-index, "(1, 2)"
  double analytic = 0.0, numeric = 0.0;
  std::string message;  ///< empty when ok
};
std::ostream& operator<<(std::ostream& os, const GradcheckResult& r);

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Checks the gradients of fn with respect to every input that requires grad. Row-sparse
/// gradients are compared through to_dense(). Leaves the inputs' values and gradients as found.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace tapegrad
