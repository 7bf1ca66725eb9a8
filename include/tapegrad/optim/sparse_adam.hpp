// include/tapegrad/optim/sparse_adam.hpp
//
// SparseAdam, the "lazy" Adam of PyTorch (docs/semantics.md#optimizers): for row-sparse gradients only
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
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// SparseAdam's hyper-parameters, PyTorch's defaults.
class SparseAdamOptions {
 public:
  explicit SparseAdamOptions(double lr = 1e-3) : lr_(lr) {}

  /// ValueError with PyTorch's texts (lr and eps must be > 0, strictly).
  void check(const std::string& where) const;

  /// Learning rate, > 0 (strict, as PyTorch); default 1e-3.
  TAPEGRAD_HYPER(double, lr);
  /// (β1, β2), each in [0, 1); default (0.9, 0.999).
  TAPEGRAD_HYPER(Betas, betas) = {0.9, 0.999};
  /// Added to sqrt(v) (not bias-corrected), > 0 (strict); default 1e-8.
  TAPEGRAD_HYPER(double, eps) = 1e-8;
  /// Ascend instead of descend: the gradient's sign is flipped first; default false.
  TAPEGRAD_HYPER(bool, maximize) = false;
};

/// One parameter's SparseAdam state: dense m and v, of which only touched rows ever change.
struct SparseAdamState {
  std::int64_t step = 0;  ///< t: advanced at every step with a non-null gradient, even an empty one
  Array exp_avg;          ///< m, the parameter's shape
  Array exp_avg_sq;       ///< v, the parameter's shape

  /// Each tensor under its name in PyTorch's state[p] (optimizer.hpp).
  static void tensor_fields(auto& s, auto&& field) {
    field("exp_avg", s.exp_avg);
    field("exp_avg_sq", s.exp_avg_sq);
  }
};

class SparseAdam : public OptimizerOf<SparseAdamOptions, SparseAdamState> {
 public:
  explicit SparseAdam(std::vector<Parameter> params,
                      SparseAdamOptions options = SparseAdamOptions())
      : OptimizerOf("SparseAdam", std::move(params), options) {}
  explicit SparseAdam(std::vector<Group> groups) : OptimizerOf("SparseAdam", std::move(groups)) {}
  /// Throws TypeError (changing nothing) if any gradient is dense.
  void step() override;
};

}  // namespace tapegrad::optim
