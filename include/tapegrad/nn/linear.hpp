// include/tapegrad/nn/linear.hpp
//
// Linear: y = x W^T + b, PyTorch's layout. weight (out_features, in_features), bias
// (out_features); x (*, in_features) -> y (*, out_features). Both are initialised from
// U(-1/sqrt(in_features), 1/sqrt(in_features)) — what PyTorch's kaiming_uniform_(a = sqrt(5)) and
// its bias rule reduce to — weight first, then bias, from the module's Generator
// (https://pytorch.org/docs/stable/generated/torch.nn.Linear.html).
//
// A Linear may carry a LoRA adapter (lora.hpp): add_lora freezes the weight and bias and registers
// PEFT's children lora_dropout, lora_A and lora_B, whose branch forward then adds:
// y = x W^T + b + scaling * lora_B(lora_A(lora_dropout(x))).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/lora.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn {

class LinearOptions {
 public:
  LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}

  /// Size of each input sample, >= 0.
  TAPEGRAD_ARG(std::int64_t, in_features);
  /// Size of each output sample, >= 0.
  TAPEGRAD_ARG(std::int64_t, out_features);
  /// Learn an additive bias (without one, no "bias" is registered); default true.
  TAPEGRAD_ARG(bool, bias) = true;
};

class Linear : public Module {
 public:
  /// Negative sizes are a ValueError. A null generator means the default one.
  explicit Linear(LinearOptions options, std::shared_ptr<Generator> generator = nullptr);
  Linear(std::int64_t in_features, std::int64_t out_features);

  /// x: (*, in_features) -> (*, out_features), plus the LoRA branch when an adapter is attached.
  /// A wrong last dimension is a ShapeError
  /// ("mat1 and mat2 shapes cannot be multiplied (10x8 and 16x11) | Linear 'out': ...").
  Tensor forward(const Tensor& x);
  /// Draws weight, then bias, again from U(-1/sqrt(in), 1/sqrt(in)).
  void reset_parameters();
  const LinearOptions& options() const { return options_; }

  // ---- a LoRA adapter (lora.hpp) ----
  /// Freezes weight and bias and attaches an adapter: lora_A drawn as a new Linear's weight from
  /// `generator` (the default one when null; nothing drawn under a SkipInitGuard), lora_B zeros.
  /// ValueError for options that validate() refuses or a Linear that has an adapter already.
  void add_lora(const LoRAOptions& options, std::shared_ptr<Generator> generator = nullptr);
  /// weight += scaling * B A, then the adapter is removed (PEFT's merge_and_unload for one
  /// layer); weight and bias stay frozen. ValueError when there is no adapter.
  void merge_lora();
  bool has_lora() const { return lora_A != nullptr; }
  /// The adapter's options; ValueError when there is none.
  const LoRAOptions& lora_options() const;

  Parameter weight;  ///< registered as "weight", (out_features, in_features)
  Parameter bias;    ///< registered as "bias", (out_features); undefined when bias(false)
  std::shared_ptr<Dropout> lora_dropout;  ///< "lora_dropout", with an adapter: on its input only
  std::shared_ptr<Linear> lora_A;         ///< "lora_A", with an adapter: Linear(in, r), no bias
  std::shared_ptr<Linear> lora_B;         ///< "lora_B", with an adapter: Linear(r, out), no bias

  /// "Linear"; "lora.Linear" with an adapter, as PEFT names the layer it wraps a Linear in.
  std::string type_name() const override { return has_lora() ? "lora.Linear" : "Linear"; }
  void extra_repr(
      std::ostream& os) const override;  ///< "in_features=16, out_features=11, bias=True"

 private:
  LinearOptions options_;
  std::shared_ptr<Generator> generator_;
  std::optional<LoRAOptions> lora_options_;  // set while an adapter is attached
};

}  // namespace tapegrad::nn
