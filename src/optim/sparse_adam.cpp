// src/optim/sparse_adam.cpp
//
// SparseAdam, PyTorch's order: the gradient is coalesced (ids ascending, duplicate rows summed),
// then only its rows of m, v and θ are updated, by kernels::sparse_adam_kernels().step of the set in
// use (sparse_adam_reference.cpp holds the maths as plain loops, sparse_adam_fast.cpp the fast
// version). The update is not linear in g, so the rows of a repeated id must be summed BEFORE it,
// not applied one by one.
#include "tapegrad/optim/sparse_adam.hpp"

#include "sparse_adam_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

void SparseAdamOptions::check(const std::string& where) const {
  // PyTorch's `not 0.0 < x`: strict, and NaN is refused.
  check_hyper(0.0 < lr(), "Invalid learning rate", lr(), where, "lr > 0");
  check_hyper(0.0 < eps(), "Invalid epsilon value", eps(), where, "eps > 0");
  check_betas(betas(), where);
}

void SparseAdam::step() {
  autograd::NoGradGuard no_grad;  // updating weights is not part of the model
  // Every gradient is checked before any parameter changes: a refused step changes nothing.
  for (std::size_t g = 0; g < num_param_groups(); ++g)
    for (const Parameter& p : params(g)) {
      if (!p.has_grad()) continue;
      if (!p.grad_is_sparse())
        fail<TypeError>(
            "SparseAdam does not support dense gradients, please consider Adam instead | "
            "SparseAdam: ",
            param_label(p), " has a dense gradient");
      check_sparse_rows(p, "SparseAdam");
    }

  const kernels::SparseAdamKernels& kernel = kernels::sparse_adam_kernels();  // the set in use
  std::size_t id = 0;
  for (std::size_t g = 0; g < num_param_groups(); ++g) {
    const SparseAdamOptions& o = options(g);
    const auto [beta1, beta2] = o.betas();
    for (const Parameter& p : params(g)) {
      const std::size_t i = id++;
      if (!p.has_grad()) continue;  // no gradient: no update, no state, no step count
      std::optional<SparseAdamState>& slot = state_slot(i);
      if (!slot) slot = SparseAdamState{0, zeros_like(p), zeros_like(p)};
      SparseAdamState& s = *slot;
      s.step += 1;  // even if the gradient turns out to have no rows
      const RowSparseGrad G = p.sparse_grad().coalesce();
      if (G.indices.size() == 0) continue;
      const kernels::SparseAdamStep h{o.lr(), beta1, beta2, o.eps(), s.step, o.maximize()};
      kernel.step(h, G.indices.size(), G.dense_shape[1], G.indices.data(), G.values.data(),
                  p.mutable_data().data(), s.exp_avg.data(), s.exp_avg_sq.data());  // one bump
    }
  }
}

}  // namespace tapegrad::optim
