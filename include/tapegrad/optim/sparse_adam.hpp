// include/tapegrad/optim/sparse_adam.hpp
//
// SparseAdam, the "lazy" Adam of PyTorch (SPEC 2.10.5): for row-sparse gradients only
// (Embedding(sparse=true)). Only the rows present in this step's gradient move, and only their
// moments decay; every other row of θ, m and v stays bit-identical. No weight decay, no amsgrad;
// eps is added to sqrt(v) before the bias correction (unlike Adam). The usual setup is two
// optimizers: SparseAdam for the sparse embedding, Adam for the rest.
//
//     optim::SparseAdam sparse_opt({emb->weight}, optim::SparseAdamOptions(1e-3));
//     optim::Adam dense_opt(rest_of_the_parameters);
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// SparseAdam's hyper-parameters, PyTorch's defaults.
class SparseAdamOptions {
 public:
  explicit SparseAdamOptions(double lr = 1e-3) : lr_(lr) {}
  /// Learning rate, > 0 (strict, as PyTorch).
  SparseAdamOptions& lr(double v) { lr_ = v; return *this; }
  double lr() const { return lr_; }
  /// (β1, β2), each in [0, 1).
  SparseAdamOptions& betas(std::pair<double, double> v) { betas_ = v; return *this; }
  std::pair<double, double> betas() const { return betas_; }
  /// Added to sqrt(v) (not bias-corrected), > 0 (strict).
  SparseAdamOptions& eps(double v) { eps_ = v; return *this; }
  double eps() const { return eps_; }
  /// Ascend instead of descend: the gradient's sign is flipped first.
  SparseAdamOptions& maximize(bool v) { maximize_ = v; return *this; }
  bool maximize() const { return maximize_; }

 private:
  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  bool maximize_ = false;
};

/// One parameter's SparseAdam state: dense m and v, of which only touched rows ever change.
struct SparseAdamState {
  std::int64_t step = 0;        ///< t: advanced at every step with a non-null gradient, even an empty one
  Array exp_avg;                ///< m, the parameter's shape
  Array exp_avg_sq;             ///< v, the parameter's shape
};

class SparseAdam : public Optimizer {
 public:
  struct Group {
    std::vector<Parameter> params;
    SparseAdamOptions options;
  };
  explicit SparseAdam(std::vector<Parameter> params, SparseAdamOptions options = SparseAdamOptions());
  explicit SparseAdam(std::vector<Group> groups);

  /// Throws TypeError (changing nothing) if any gradient is dense.
  void step() override;
  SparseAdamOptions& options(std::size_t group);
  const SparseAdamOptions& options(std::size_t group) const;
  double lr(std::size_t group) const override { return options(group).lr(); }
  void set_lr(std::size_t group, double lr) override { options(group).lr(lr); }
  const SparseAdamState* state(const Parameter& p) const;

 protected:
  StateLayout state_layout() const override;
  HyperParams hyper_params(std::size_t group) const override;
  void check_hyper_params(const HyperParams& h, const std::string& where) const override;
  void set_hyper_params(std::size_t group, const HyperParams& h) override;
  std::optional<ParamState> param_state(std::size_t id) const override;
  void set_param_state(std::size_t id, const ParamState* s) override;

 private:
  static std::vector<std::vector<Parameter>> checked(const std::vector<Group>& groups);
  std::vector<SparseAdamOptions> options_;
  std::vector<std::optional<SparseAdamState>> state_;   // by parameter id
};

}  // namespace tapegrad::optim
