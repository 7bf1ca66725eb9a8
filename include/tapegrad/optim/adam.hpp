// include/tapegrad/optim/adam.hpp
//
// Adam and AdamW, in PyTorch's order of operations (docs/semantics.md#optimizers). Two classes,
// neither built from the other: they differ in what weight_decay means.
//   Adam   weight_decay is L2 ("coupled"): wd·θ is added to the gradient, so it passes through
//          the moments and is normalised like the gradient. Default 0.
//   AdamW  weight_decay is decoupled: θ ← θ·(1 − lr·wd) before the Adam update, whatever the
//          gradient. Default 1e-2.
// Their options are the same list (AdamOptionsOf, written once, with each one's weight_decay
// default); they share the per-parameter state (AdamState) and the step (AdamOptimizerOf, told
// which weight_decay it applies), with its one-pass update kernel, in adam.cpp. Dense gradients
// only: a row-sparse one (Embedding(sparse=true)) belongs to SparseAdam or SGD.
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

/// Adam's and AdamW's hyper-parameters: the same list with PyTorch's defaults, but for
/// weight_decay's, which `Defaults` gives (AdamDefaults: 0; AdamWDefaults: 1e-2). So AdamOptions
/// and AdamWOptions are two types (an Adam cannot be given AdamW's options), each setter returns
/// the caller's own type, and each list is written once. Checked when an optimizer is built or
/// loaded, or set_options() / set_lr() is called.
template <class Defaults>
class AdamOptionsOf {
 public:
  explicit AdamOptionsOf(double lr = 1e-3) : lr_(lr) {}

  /// ValueError with PyTorch's texts ("Invalid learning rate: -1.0 | Adam: expected lr >= 0").
  void check(const std::string& where) const;

  /// Learning rate, >= 0 (0 is accepted: nothing moves); default 1e-3.
  TAPEGRAD_HYPER(double, lr);
  /// (β1, β2), each in [0, 1): decay rates of the first and second moment averages; (0.9, 0.999).
  TAPEGRAD_HYPER(Betas, betas) = {0.9, 0.999};
  /// Added to the bias-corrected sqrt(v) in the denominator, >= 0; default 1e-8.
  TAPEGRAD_HYPER(double, eps) = 1e-8;
  /// >= 0. Adam: L2, g += wd·θ (default 0). AdamW: decoupled, θ *= 1 − lr·wd (default 1e-2).
  TAPEGRAD_HYPER(double, weight_decay) = Defaults::weight_decay;
  /// Divide by sqrt of the running maximum of v instead of v itself (AMSGrad); default false.
  TAPEGRAD_HYPER(bool, amsgrad) = false;
  /// Ascend instead of descend: the gradient's sign is flipped first; default false.
  TAPEGRAD_HYPER(bool, maximize) = false;
};

struct AdamDefaults {
  static constexpr double weight_decay = 0.0;  ///< Adam's L2 penalty: none
};
struct AdamWDefaults {
  static constexpr double weight_decay = 1e-2;  ///< AdamW's decoupled decay, PyTorch's default
};
using AdamOptions = AdamOptionsOf<AdamDefaults>;
using AdamWOptions = AdamOptionsOf<AdamWDefaults>;

/// One parameter's Adam/AdamW state, created at its first step with a gradient.
struct AdamState {
  std::int64_t step = 0;                ///< t: this parameter's own step count
  Array exp_avg;                        ///< m, the parameter's shape
  Array exp_avg_sq;                     ///< v, the parameter's shape
  std::optional<Array> max_exp_avg_sq;  ///< vmax, the running maximum of v (amsgrad only)

  /// Each tensor under its name in PyTorch's state[p] (optimizer.hpp).
  static void tensor_fields(auto& s, auto&& field) {
    field("exp_avg", s.exp_avg);
    field("exp_avg_sq", s.exp_avg_sq);
    field("max_exp_avg_sq", s.max_exp_avg_sq);
  }
};

/// What Adam and AdamW share: their state and their step, which each calls with what its
/// weight_decay means.
template <class Options>
class AdamOptimizerOf : public OptimizerOf<Options, AdamState> {
 protected:
  using OptimizerOf<Options, AdamState>::OptimizerOf;

  enum class WeightDecay {
    l2,         ///< Adam's: wd·θ added to the gradient
    decoupled,  ///< AdamW's: θ ← θ·(1 − lr·wd) before the update
  };
  /// One step of every parameter that has a gradient (adam.cpp); the caller checked them.
  void step_with(WeightDecay weight_decay);
};

class Adam : public AdamOptimizerOf<AdamOptions> {
 public:
  explicit Adam(std::vector<Parameter> params, AdamOptions options = AdamOptions())
      : AdamOptimizerOf("Adam", std::move(params), options) {}
  explicit Adam(std::vector<Group> groups) : AdamOptimizerOf("Adam", std::move(groups)) {}
  /// Throws TypeError (changing nothing) if any gradient is row-sparse.
  void step() override;
};

class AdamW : public AdamOptimizerOf<AdamWOptions> {
 public:
  explicit AdamW(std::vector<Parameter> params, AdamWOptions options = AdamWOptions())
      : AdamOptimizerOf("AdamW", std::move(params), options) {}
  explicit AdamW(std::vector<Group> groups) : AdamOptimizerOf("AdamW", std::move(groups)) {}
  /// Throws TypeError (changing nothing) if any gradient is row-sparse.
  void step() override;
};

}  // namespace tapegrad::optim
