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
  /// Learning rate, >= 0.
  SGDOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  double lr() const { return lr_; }
  /// Momentum factor μ, >= 0: buf ← buf·μ + (1 − dampening)·g. 0 keeps no state.
  SGDOptions& momentum(double v) {
    momentum_ = v;
    return *this;
  }
  double momentum() const { return momentum_; }
  /// Dampening of the gradient's share in the buffer (not applied at the buffer's first step).
  SGDOptions& dampening(double v) {
    dampening_ = v;
    return *this;
  }
  double dampening() const { return dampening_; }
  /// L2 penalty, >= 0: g ← g + weight_decay·θ. Needs a dense gradient.
  SGDOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  double weight_decay() const { return weight_decay_; }
  /// Nesterov momentum: step along g + μ·buf instead of buf. Needs momentum > 0 and dampening 0.
  SGDOptions& nesterov(bool v) {
    nesterov_ = v;
    return *this;
  }
  bool nesterov() const { return nesterov_; }
  /// Ascend instead of descend: the gradient's sign is flipped first.
  SGDOptions& maximize(bool v) {
    maximize_ = v;
    return *this;
  }
  bool maximize() const { return maximize_; }

  /// ValueError with PyTorch's texts ("Invalid momentum value: -0.1 | SGD: ...").
  void check(const std::string& where) const;
  HyperParams to_hyper() const;
  static SGDOptions from_hyper(const HyperParams& h, const std::string& where);

 private:
  double lr_;
  double momentum_ = 0.0;
  double dampening_ = 0.0;
  double weight_decay_ = 0.0;
  bool nesterov_ = false;
  bool maximize_ = false;
};

/// One parameter's SGD state: the momentum buffer (only kept while momentum ≠ 0).
struct SGDState {
  Array momentum_buffer;  ///< the parameter's shape, dense even for row-sparse gradients

  static Optimizer::StateLayout layout() { return {false, {"momentum_buffer"}, {}}; }
  ParamState to_param_state() const;
  static SGDState from_param_state(ParamState&& s);
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
