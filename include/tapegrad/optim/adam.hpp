// include/tapegrad/optim/adam.hpp
//
// Adam and AdamW, in PyTorch's order of operations (SPEC 2.10.3, 2.10.4). Two classes, neither
// built from the other: they differ in what weight_decay means.
//   Adam   weight_decay is L2 ("coupled"): wd·θ is added to the gradient, so it passes through
//          the moments and is normalised like the gradient. Default 0.
//   AdamW  weight_decay is decoupled: θ ← θ·(1 − lr·wd) before the Adam update, whatever the
//          gradient. Default 1e-2.
// They share the per-parameter state (AdamState) and the one-pass update kernel in adam.cpp.
// Dense gradients only: a row-sparse one (Embedding(sparse=true)) belongs to SparseAdam or SGD.
//
//     optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// Adam's hyper-parameters, PyTorch's defaults. Checked when an optimizer is built or loaded.
class AdamOptions {
 public:
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  /// Learning rate, >= 0 (0 is accepted: nothing moves).
  AdamOptions& lr(double v) { lr_ = v; return *this; }
  double lr() const { return lr_; }
  /// (β1, β2), each in [0, 1): decay rates of the first and second moment averages.
  AdamOptions& betas(std::pair<double, double> v) { betas_ = v; return *this; }
  std::pair<double, double> betas() const { return betas_; }
  /// Added to the bias-corrected sqrt(v) in the denominator, >= 0.
  AdamOptions& eps(double v) { eps_ = v; return *this; }
  double eps() const { return eps_; }
  /// L2 penalty, >= 0: g ← g + weight_decay·θ before the moments (coupled; see AdamW).
  AdamOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  double weight_decay() const { return weight_decay_; }
  /// Divide by sqrt of the running maximum of v instead of v itself (AMSGrad).
  AdamOptions& amsgrad(bool v) { amsgrad_ = v; return *this; }
  bool amsgrad() const { return amsgrad_; }
  /// Ascend instead of descend: the gradient's sign is flipped first.
  AdamOptions& maximize(bool v) { maximize_ = v; return *this; }
  bool maximize() const { return maximize_; }

 private:
  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 0.0;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

/// AdamW's hyper-parameters: Adam's, except that weight_decay is decoupled and defaults to 1e-2.
class AdamWOptions {
 public:
  explicit AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  AdamWOptions& lr(double v) { lr_ = v; return *this; }
  double lr() const { return lr_; }
  AdamWOptions& betas(std::pair<double, double> v) { betas_ = v; return *this; }
  std::pair<double, double> betas() const { return betas_; }
  AdamWOptions& eps(double v) { eps_ = v; return *this; }
  double eps() const { return eps_; }
  /// Decoupled decay, >= 0: θ ← θ·(1 − lr·weight_decay) each step, before the Adam update.
  AdamWOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  double weight_decay() const { return weight_decay_; }
  AdamWOptions& amsgrad(bool v) { amsgrad_ = v; return *this; }
  bool amsgrad() const { return amsgrad_; }
  AdamWOptions& maximize(bool v) { maximize_ = v; return *this; }
  bool maximize() const { return maximize_; }

 private:
  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 1e-2;
  bool amsgrad_ = false;
  bool maximize_ = false;
};

/// One parameter's Adam/AdamW state, created at its first step with a gradient.
struct AdamState {
  std::int64_t step = 0;        ///< t: this parameter's own step count
  Array exp_avg;                ///< m, the parameter's shape
  Array exp_avg_sq;             ///< v, the parameter's shape
  std::optional<Array> max_exp_avg_sq;   ///< vmax, the running maximum of v (amsgrad only)
};

class Adam : public Optimizer {
 public:
  /// A parameter group with its own options (PyTorch's {"params": [...], "lr": ...}).
  struct Group {
    std::vector<Parameter> params;
    AdamOptions options;
  };
  explicit Adam(std::vector<Parameter> params, AdamOptions options = AdamOptions());
  explicit Adam(std::vector<Group> groups);

  void step() override;
  AdamOptions& options(std::size_t group);
  const AdamOptions& options(std::size_t group) const;
  double lr(std::size_t group) const override { return options(group).lr(); }
  void set_lr(std::size_t group, double lr) override { options(group).lr(lr); }
  /// p's state, or nullptr before its first step; throws ValueError if p is not optimized here.
  const AdamState* state(const Parameter& p) const;

 protected:
  StateLayout state_layout() const override;
  HyperParams hyper_params(std::size_t group) const override;
  void check_hyper_params(const HyperParams& h, const std::string& where) const override;
  void set_hyper_params(std::size_t group, const HyperParams& h) override;
  std::optional<ParamState> param_state(std::size_t id) const override;
  void set_param_state(std::size_t id, const ParamState* s) override;

 private:
  static std::vector<std::vector<Parameter>> checked(const std::vector<Group>& groups);
  std::vector<AdamOptions> options_;
  std::vector<std::optional<AdamState>> state_;   // by parameter id
};

class AdamW : public Optimizer {
 public:
  struct Group {
    std::vector<Parameter> params;
    AdamWOptions options;
  };
  explicit AdamW(std::vector<Parameter> params, AdamWOptions options = AdamWOptions());
  explicit AdamW(std::vector<Group> groups);

  void step() override;
  AdamWOptions& options(std::size_t group);
  const AdamWOptions& options(std::size_t group) const;
  double lr(std::size_t group) const override { return options(group).lr(); }
  void set_lr(std::size_t group, double lr) override { options(group).lr(lr); }
  const AdamState* state(const Parameter& p) const;

 protected:
  StateLayout state_layout() const override;
  HyperParams hyper_params(std::size_t group) const override;
  void check_hyper_params(const HyperParams& h, const std::string& where) const override;
  void set_hyper_params(std::size_t group, const HyperParams& h) override;
  std::optional<ParamState> param_state(std::size_t id) const override;
  void set_param_state(std::size_t id, const ParamState* s) override;

 private:
  static std::vector<std::vector<Parameter>> checked(const std::vector<Group>& groups);
  std::vector<AdamWOptions> options_;
  std::vector<std::optional<AdamState>> state_;   // by parameter id
};

}  // namespace tapegrad::optim
