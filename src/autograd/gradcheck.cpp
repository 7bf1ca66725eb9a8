// src/autograd/gradcheck.cpp
//
// L(x) = sum(R * fn(x)), R a fixed random weighting of the output, accumulated in double.
// analytic: dL/dx by backward(R); numeric: (L(x + eps e_j) - L(x - eps e_j)) / (2 eps).
#include "tapegrad/autograd/gradcheck.hpp"

#include <cmath>
#include <optional>
#include <ostream>
#include <sstream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad {

std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) {
  if (r.ok) return os << "gradcheck passed (" << r.checked << " elements)";
  return os << r.message;
}

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& o) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    check<ValueError>(
        !inputs[i].requires_grad() || inputs[i].is_leaf(), "gradcheck: expected input ", i,
        " to be a leaf tensor, got the output of an op; pass the leaves fn is built from");
  // Keep the inputs' gradients, so that gradcheck leaves them as it found them.
  std::vector<std::optional<Array>> kept(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].has_grad()) kept[i] = inputs[i].grad_dense();
  for (const Tensor& t : inputs) t.zero_grad(true);

  Tensor y = fn(inputs);
  Generator gen(o.seed);
  const Array R = randn(y.shape(), &gen);
  auto weighted = [&R](const Array& out) {
    double L = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i) L += double(R.data()[i]) * double(out.data()[i]);
    return L;
  };

  GradcheckResult r;
  std::vector<Array> analytic(inputs.size());
  if (y.requires_grad()) {
    y.backward(R);
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].requires_grad())
        analytic[i] = inputs[i].has_grad() ? inputs[i].grad_dense()
                                           : Array(xt::zeros<float>(inputs[i].shape()));
  }

  double worst = -INFINITY;
  {
    autograd::NoGradGuard no_grad;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) continue;
      Array& x = inputs[i].mutable_data();
      for (std::size_t j = 0; j < x.size(); ++j) {
        const float original = x.data()[j];
        x.data()[j] = static_cast<float>(original + o.eps);
        const double plus = weighted(fn(inputs).data());
        x.data()[j] = static_cast<float>(original - o.eps);
        const double minus = weighted(fn(inputs).data());
        x.data()[j] = original;
        // the step actually taken, after rounding to float32
        const double step = double(static_cast<float>(original + o.eps)) -
                            double(static_cast<float>(original - o.eps));
        const double numeric = (plus - minus) / step;
        const double ana = analytic[i].data()[j];
        const double excess = std::abs(numeric - ana) - (o.atol + o.rtol * std::abs(ana));
        ++r.checked;
        if (excess > worst || std::isnan(excess)) {
          worst = std::isnan(excess) ? INFINITY : excess;
          r.input = i;
          r.index = position_str(j, x.shape());
          r.analytic = ana;
          r.numeric = numeric;
        }
      }
      inputs[i].bump_version();
    }
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].zero_grad(true);
    if (kept[i]) inputs[i].set_grad(std::move(*kept[i]));
  }
  r.ok = worst <= 0.0;
  if (!r.ok) {
    std::ostringstream os;
    os.precision(8);
    os << "gradcheck failed: input " << r.input << " at " << r.index << ": analytic " << r.analytic
       << " vs numeric " << r.numeric << " (|diff| = " << std::abs(r.analytic - r.numeric)
       << ", allowed " << o.atol << " + " << o.rtol << " * |analytic|)";
    r.message = os.str();
  }
  return r;
}

}  // namespace tapegrad
