// include/tapegrad/optim/adam.hpp
//
// Adam and AdamW, in PyTorch's order of operations (docs/semantics.md#optimizers). Two classes,
// neither built from the other: they differ in what weight_decay means.
//   Adam   weight_decay is L2 ("coupled"): wd·θ is added to the gradient, so it passes through
//          the moments and is normalised like the gradient. Default 0.
//   AdamW  weight_decay is decoupled: θ ← θ·(1 − lr·wd) before the Adam update, whatever the
//          gradient. Default 1e-2.
// Their options are the same list (AdamOptionsOf, written once); they share the per-parameter
// state (AdamState) and the one-pass update kernel in adam.cpp. Dense gradients only: a row-sparse
// one (Embedding(sparse=true)) belongs to SparseAdam or SGD.
//
//     optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// Adam's and AdamW's hyper-parameters, PyTorch's defaults but weight_decay's, which each sets.
/// `Self` is AdamOptions or AdamWOptions, so that each setter returns the caller's own type.
/// Checked when an optimizer is built or loaded.
template <class Self>
class AdamOptionsOf {
 public:
  /// Learning rate, >= 0 (0 is accepted: nothing moves).
  Self& lr(double v) {
    lr_ = v;
    return self();
  }
  double lr() const { return lr_; }
  /// (β1, β2), each in [0, 1): decay rates of the first and second moment averages.
  Self& betas(std::pair<double, double> v) {
    betas_ = v;
    return self();
  }
  std::pair<double, double> betas() const { return betas_; }
  /// Added to the bias-corrected sqrt(v) in the denominator, >= 0.
  Self& eps(double v) {
    eps_ = v;
    return self();
  }
  double eps() const { return eps_; }
  /// >= 0. Adam: an L2 penalty, g ← g + weight_decay·θ before the moments (default 0).
  /// AdamW: decoupled, θ ← θ·(1 − lr·weight_decay) each step before the update (default 1e-2).
  Self& weight_decay(double v) {
    weight_decay_ = v;
    return self();
  }
  double weight_decay() const { return weight_decay_; }
  /// Divide by sqrt of the running maximum of v instead of v itself (AMSGrad).
  Self& amsgrad(bool v) {
    amsgrad_ = v;
    return self();
  }
  bool amsgrad() const { return amsgrad_; }
  /// Ascend instead of descend: the gradient's sign is flipped first.
  Self& maximize(bool v) {
    maximize_ = v;
    return self();
  }
  bool maximize() const { return maximize_; }

  /// ValueError with PyTorch's texts ("Invalid learning rate: -1.0 | Adam: ...").
  void check(const std::string& where) const;
  HyperParams to_hyper() const;
  static Self from_hyper(const HyperParams& h, const std::string& where);

 protected:
  AdamOptionsOf(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}

 private:
  Self& self() { return static_cast<Self&>(*this); }
  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

class AdamOptions : public AdamOptionsOf<AdamOptions> {
 public:
  explicit AdamOptions(double lr = 1e-3) : AdamOptionsOf(lr, /*weight_decay=*/0.0) {}
};
class AdamWOptions : public AdamOptionsOf<AdamWOptions> {
 public:
  explicit AdamWOptions(double lr = 1e-3) : AdamOptionsOf(lr, /*weight_decay=*/1e-2) {}
};

/// One parameter's Adam/AdamW state, created at its first step with a gradient.
struct AdamState {
  std::int64_t step = 0;                ///< t: this parameter's own step count
  Array exp_avg;                        ///< m, the parameter's shape
  Array exp_avg_sq;                     ///< v, the parameter's shape
  std::optional<Array> max_exp_avg_sq;  ///< vmax, the running maximum of v (amsgrad only)

  static Optimizer::StateLayout layout();
  ParamState to_param_state() const;
  static AdamState from_param_state(ParamState&& s);
};

class Adam : public OptimizerOf<AdamOptions, AdamState> {
 public:
  explicit Adam(std::vector<Parameter> params, AdamOptions options = AdamOptions())
      : OptimizerOf("Adam", std::move(params), options) {}
  explicit Adam(std::vector<Group> groups) : OptimizerOf("Adam", std::move(groups)) {}
  /// Throws TypeError (changing nothing) if any gradient is row-sparse.
  void step() override;
};

class AdamW : public OptimizerOf<AdamWOptions, AdamState> {
 public:
  explicit AdamW(std::vector<Parameter> params, AdamWOptions options = AdamWOptions())
      : OptimizerOf("AdamW", std::move(params), options) {}
  explicit AdamW(std::vector<Group> groups) : OptimizerOf("AdamW", std::move(groups)) {}
  /// Throws TypeError (changing nothing) if any gradient is row-sparse.
  void step() override;
};

}  // namespace tapegrad::optim
