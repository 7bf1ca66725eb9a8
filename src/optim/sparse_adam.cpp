// src/optim/sparse_adam.cpp
//
// SparseAdam , PyTorch's order: the gradient is coalesced (ids ascending, duplicate
// rows summed), then only its rows of m, v and θ are updated, in one pass per row. The update is
// not linear in g, so the rows of a repeated id must be summed BEFORE it, not applied one by one.
// Bias corrections are computed in double, per parameter, and cast to float once.
#include "tapegrad/optim/sparse_adam.hpp"

#include <cmath>

#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

namespace {

struct SparseAdamScalars {
  float w1, w2;         // 1 − β1, 1 − β2
  float neg_step_size;  // −lr·sqrt(bc2)/bc1,   bc1 = 1 − β1^t,  bc2 = 1 − β2^t
  float eps;
  bool maximize;
};

// sparse_adam_update: for the rows r of the coalesced gradient G only :
//   g   = maximize ? −G_r : G_r
//   Δm  = (g − m_r)·(1 − β1) ;     m_r = m_r + Δm
//   Δv  = (g² − v_r)·(1 − β2) ;    v_r = v_r + Δv
//   θ_r = θ_r + (−step_size)·(m_r / (sqrt(v_r) + eps))
// (m + (1 − β)(g − m) is β·m + (1 − β)·g written as a correction, which is what lets the rows
// outside G simply stay as they are.) Rows not in G: m, v and θ unchanged, bit for bit.
// The rows of a coalesced G are distinct, so they are split over the threads.
void sparse_adam_update(const SparseAdamScalars& k, const RowSparseGrad& G, float* theta, float* m,
                        float* v) {
  const std::size_t dim = G.dense_shape[1];
  const float sign =
      k.maximize ? -1.0f : 1.0f;  // a factor rather than a select: the loop vectorises
  const std::size_t grain =
      std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(dim, 1));
  detail::parallel_for(G.indices.size(), grain, [&](std::size_t first, std::size_t last) {
    // The scalars in registers: read through k (and the captured sign) inside the loop, they
    // might alias the floats it stores, so the compiler reloaded them per element and left the
    // loop scalar (perf on W1-M-sparse).
    const float w1 = k.w1, w2 = k.w2, neg_step_size = k.neg_step_size, eps = k.eps, factor = sign;
    for (std::size_t r = first; r < last; ++r) {
      const std::size_t offset = static_cast<std::size_t>(G.indices.data()[r]) * dim;
      const float* grad = G.values.data() + r * dim;
      float *theta_r = theta + offset, *m_r = m + offset, *v_r = v + offset;
      for (std::size_t j = 0; j < dim; ++j) {
        const float g = factor * grad[j];
        const float dm = (g - m_r[j]) * w1;
        const float dv = (g * g - v_r[j]) * w2;
        m_r[j] = m_r[j] + dm;
        v_r[j] = v_r[j] + dv;
        theta_r[j] = theta_r[j] + neg_step_size * (m_r[j] / (std::sqrt(v_r[j]) + eps));
      }
    }
  });
}

}  // namespace

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
      const double bc1 = 1.0 - std::pow(beta1, double(s.step));
      const double bc2 = 1.0 - std::pow(beta2, double(s.step));
      const double step_size = o.lr() * std::sqrt(bc2) / bc1;
      const SparseAdamScalars k{float(1.0 - beta1), float(1.0 - beta2), float(-step_size),
                                float(o.eps()), o.maximize()};
      sparse_adam_update(k, G, p.mutable_data().data(), s.exp_avg.data(),
                         s.exp_avg_sq.data());  // one bump
    }
  }
}

}  // namespace tapegrad::optim
