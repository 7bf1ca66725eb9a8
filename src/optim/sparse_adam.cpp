// src/optim/sparse_adam.cpp
//
// SparseAdam, PyTorch's order: the gradient is coalesced (ids ascending, duplicate rows summed),
// then only its rows of m, v and θ are updated, by sparse_adam_step of the kernel set in use
// (kernels::pick). The update is not linear in g, so the rows of a repeated id must be summed
// BEFORE it, not applied one by one. The reference kernel below is PyTorch's algorithm
// (https://pytorch.org/docs/stable/generated/torch.optim.SparseAdam.html) on the gradient's rows
// only, one element after another, in float, no threads (docs/kernels.md: read this first). Its
// fast versions (src/kernels/optim/sparse_adam.cpp) make the same float operations and split the
// rows over the threads, so every set gives the same bits (docs/semantics.md#kernel-sets).
#include "tapegrad/optim/sparse_adam.hpp"

#include <cmath>

#include "sparse_adam_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

// ---- the reference kernel -----------------------------------------------------------------------

// for the rows r of the gradient G only (the others keep m, v and θ as they are):
// g = ±G_r     m_r = m_r + (g − m_r)·(1 − β1)     v_r = v_r + (g² − v_r)·(1 − β2)
// θ_r = θ_r − lr·sqrt(1 − β2^t)/(1 − β1^t) · m_r / (sqrt(v_r) + eps)    (eps before the correction)
// The moments move by a correction, as PyTorch's code writes them (β·m + (1 − β)·g in exact
// arithmetic): in float it rounds otherwise, and an infinite m meeting a finite g gives NaN there
// (inf − inf), where β·m + (1 − β)·g would keep the infinity.
void sparse_adam_step(const SparseAdamStep& h, std::size_t rows, std::size_t dim,
                      const std::int64_t* ids, const float* values, float* theta, float* m,
                      float* v) {
  // Every scalar is a Python number to PyTorch: computed in double, cast to float once.
  const float eps = float(h.eps);
  const float w1 = float(1.0 - h.beta1), w2 = float(1.0 - h.beta2);
  const double t = double(h.step);
  const float step_size =
      float(h.lr * std::sqrt(1.0 - std::pow(h.beta2, t)) / (1.0 - std::pow(h.beta1, t)));
  for (std::size_t p = 0; p < rows; ++p)
    for (std::size_t j = 0; j < dim; ++j) {
      const std::size_t i = std::size_t(ids[p]) * dim + j;
      const float g = h.maximize ? -values[p * dim + j] : values[p * dim + j];
      m[i] = m[i] + (g - m[i]) * w1;
      v[i] = v[i] + (g * g - v[i]) * w2;
      theta[i] -= step_size * (m[i] / (std::sqrt(v[i]) + eps));
    }
}

// ---- the optimizer ------------------------------------------------------------------------------

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

  const auto update = kernels::pick<sparse_adam_step>();  // the set in use
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
      const SparseAdamStep h{o.lr(), beta1, beta2, o.eps(), s.step, o.maximize()};
      update(h, G.indices.size(), G.dense_shape[1], G.indices.data(), G.values.data(),
             p.mutable_data().data(), s.exp_avg.data(), s.exp_avg_sq.data());  // one bump
    }
  }
}

}  // namespace tapegrad::optim
