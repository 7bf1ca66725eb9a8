// src/nn/linear.cpp: the Linear module, a thin shell around ops::linear.
//
// Initialisation: PyTorch draws weight with kaiming_uniform_(a = sqrt(5)), whose bound is
// gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)) = sqrt(1/3): that is 1/sqrt(fan_in).
// The bias uses the same bound (0 when fan_in is 0, where PyTorch's rule would divide by zero).
#include "tapegrad/nn/linear.hpp"

#include <cmath>
#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/sizes.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/ops/matmul.hpp"

namespace tapegrad::nn {

Linear::Linear(LinearOptions options, std::shared_ptr<Generator> generator)
    : options_(options), generator_(generator ? std::move(generator) : default_generator()) {
  const std::int64_t in = options_.in_features(), out = options_.out_features();
  check<ValueError>(in >= 0 && out >= 0, "Trying to create tensor with negative dimension ",
                    std::min(in, out), ": [", out, ", ", in,
                    "] | Linear: expected in_features >= 0 and out_features >= 0, got (", in, ", ",
                    out, ")");
  const auto in_u = static_cast<std::size_t>(in), out_u = static_cast<std::size_t>(out);
  weight = register_parameter("weight", Parameter(new_array({out_u, in_u}, "Linear: weight")));
  if (options_.bias())
    bias = register_parameter("bias", Parameter(new_array({out_u}, "Linear: bias")));
  if (!init_skipped()) reset_parameters();
}

Linear::Linear(std::int64_t in_features, std::int64_t out_features)
    : Linear(LinearOptions(in_features, out_features)) {}

void Linear::reset_parameters() {
  autograd::NoGradGuard no_grad;
  const std::int64_t in = options_.in_features();
  const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
  uniform_(weight.mutable_data(), -bound, bound, generator_.get());
  if (bias.defined()) uniform_(bias.mutable_data(), -bound, bound, generator_.get());
}

Tensor Linear::forward(const Tensor& x) {
  // ops::linear checks x's last dimension; inside this scope its message names the module
  // ("mat1 and mat2 shapes cannot be multiplied (10x8 and 16x11) | Linear 'out': ...").
  autograd::ModuleScope scope(type_name(), path());
  return ops::linear(x, weight, bias);
}

void Linear::extra_repr(std::ostream& os) const {
  os << "in_features=" << options_.in_features() << ", out_features=" << options_.out_features()
     << ", bias=" << (options_.bias() ? "True" : "False");
}

}  // namespace tapegrad::nn
