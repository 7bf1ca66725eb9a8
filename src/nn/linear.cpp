// src/nn/linear.cpp: the Linear module, a thin shell around ops::linear.
//
// Initialisation: PyTorch draws weight with kaiming_uniform_(a = sqrt(5)), whose bound is
// gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)) = sqrt(1/3): that is 1/sqrt(fan_in).
// The bias uses the same bound (0 when fan_in is 0, where PyTorch's rule would divide by zero).
//
// LoRA (lora.hpp): the adapter's A is a Linear(in, r) without bias, so it is drawn by the same
// rule, which is PEFT's for lora_A (kaiming_uniform_ with a = sqrt(5)).
#include "tapegrad/nn/linear.hpp"

#include <cmath>
#include <ostream>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/core/sizes.hpp"
#include "tapegrad/nn/skip_init.hpp"
#include "tapegrad/ops/elementwise.hpp"
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
  if (!has_lora()) return ops::linear(x, weight, bias);
  // PEFT's lora.Linear.forward: result + lora_B(lora_A(dropout(x))) * scaling, as one op whose
  // entry keeps only dropout(x) and the (N, r) lora_A(dropout(x)) for a frozen base
  // (ops/matmul.hpp).
  return ops::lora_linear(x, weight, bias, lora_dropout->forward(x), lora_A->weight, lora_B->weight,
                          float(lora_options_->scaling()));
}

// ---- LoRA ---------------------------------------------------------------------------------------

void Linear::add_lora(const LoRAOptions& options, std::shared_ptr<Generator> generator) {
  if (has_lora())
    fail<ValueError>(context(), ".add_lora: expected a Linear without an adapter, got one with r ",
                     lora_options_->r(), "; merge_lora() first, or start from the base model");
  validate(options);
  const std::shared_ptr<Generator> gen = generator ? std::move(generator) : default_generator();
  const std::int64_t r = options.r();
  // Everything is built before anything is registered: a failure leaves the Linear as it was.
  auto dropout = std::make_shared<Dropout>(options.lora_dropout(), gen);
  auto a = std::make_shared<Linear>(LinearOptions(options_.in_features(), r).bias(false), gen);
  auto b = std::make_shared<Linear>(LinearOptions(r, options_.out_features()).bias(false), gen);
  b->weight.mutable_data().fill(0.0f);  // so that a new adapter changes nothing
  weight.requires_grad_(false);
  if (bias.defined()) bias.requires_grad_(false);
  lora_dropout = register_module("lora_dropout", std::move(dropout));
  lora_A = register_module("lora_A", std::move(a));
  lora_B = register_module("lora_B", std::move(b));
  lora_options_ = options;
  lora_dropout->train(is_training());
  lora_A->train(is_training());
  lora_B->train(is_training());
}

const LoRAOptions& Linear::lora_options() const {
  check<ValueError>(has_lora(), context(),
                    ".lora_options: expected a Linear with an adapter, got "
                    "one without; add_lora first");
  return *lora_options_;
}

void Linear::merge_lora() {
  check<ValueError>(has_lora(), context(),
                    ".merge_lora: expected a Linear with an adapter, got one without");
  autograd::NoGradGuard no_grad;
  // PEFT's get_delta_weight: (B @ A) * scaling, added to the weight in float32.
  const Tensor delta = ops::matmul(lora_B->weight, lora_A->weight) * lora_options_->scaling();
  weight.mutable_data() += delta.data();
  unregister_module("lora_dropout");
  unregister_module("lora_A");
  unregister_module("lora_B");
  lora_dropout.reset();
  lora_A.reset();
  lora_B.reset();
  lora_options_.reset();
}

void Linear::extra_repr(std::ostream& os) const {
  os << "in_features=" << options_.in_features() << ", out_features=" << options_.out_features()
     << ", bias=" << (options_.bias() ? "True" : "False");
}

}  // namespace tapegrad::nn
