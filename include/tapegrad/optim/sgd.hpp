// include/tapegrad/optim/sgd.hpp
//
// Stochastic gradient descent with momentum, dampening, Nesterov momentum, L2 weight decay and
// maximize, in PyTorch's order (docs/semantics.md#optimizers). Accepts dense and row-sparse gradients: without
// momentum a row-sparse gradient moves only its rows; with momentum the buffer is dense.
//
//     optim::SGD opt(model.parameters(), optim::SGDOptions(0.1).momentum(0.9));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// SGD's hyper-parameters, PyTorch's defaults (lr 1e-3, as recent releases; older ones required it).
class SGDOptions {
 public:
  explicit SGDOptions(double lr = 1e-3) : lr_(lr) {}

  /// ValueError with PyTorch's texts ("Invalid momentum value: -0.1 | SGD: ...").
  void check(const std::string& where) const;

  /// Learning rate, >= 0; default 1e-3.
  TAPEGRAD_HYPER(double, lr);
  /// Momentum factor μ, >= 0: buf ← buf·μ + (1 − dampening)·g; default 0 (no state kept).
  TAPEGRAD_HYPER(double, momentum) = 0.0;
  /// Dampening of the gradient's share in the buffer (not at the buffer's first step); default 0.
  TAPEGRAD_HYPER(double, dampening) = 0.0;
  /// L2 penalty, >= 0: g ← g + weight_decay·θ, which needs a dense gradient; default 0.
  TAPEGRAD_HYPER(double, weight_decay) = 0.0;
  /// Nesterov momentum, a step along g + μ·buf (needs momentum > 0, dampening 0); default false.
  TAPEGRAD_HYPER(bool, nesterov) = false;
  /// Ascend instead of descend: the gradient's sign is flipped first; default false.
  TAPEGRAD_HYPER(bool, maximize) = false;
};

/// One parameter's SGD state: the momentum buffer (only kept while momentum ≠ 0).
struct SGDState {
  Array momentum_buffer;  ///< the parameter's shape, dense even for row-sparse gradients

  /// Each tensor under its name in PyTorch's state[p] (optimizer.hpp); no step count.
  static void tensor_fields(auto& s, auto&& field) { field("momentum_buffer", s.momentum_buffer); }
};

class SGD : public OptimizerOf<SGDOptions, SGDState> {
 public:
  explicit SGD(std::vector<Parameter> params, SGDOptions options = SGDOptions())
      : OptimizerOf("SGD", std::move(params), options) {}
  explicit SGD(std::vector<Group> groups) : OptimizerOf("SGD", std::move(groups)) {}
  /// Throws TypeError (changing nothing) for weight decay with a row-sparse gradient.
  void step() override;
};

}  // namespace tapegrad::optim
