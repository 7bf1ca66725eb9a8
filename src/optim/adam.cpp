// src/optim/adam.cpp
//
// Adam and AdamW (docs/semantics.md#optimizers): the checks, the state, and one step for both
// (AdamOptimizerOf::step_with, told what weight_decay means) that calls the kernel adam_step of
// the set in use (kernels::pick) once per parameter. The reference kernel below is the algorithm
// as PyTorch's documentation writes it
// (https://pytorch.org/docs/stable/generated/torch.optim.Adam.html), one element after another,
// in float, no threads (docs/kernels.md: read this first). Its fast versions
// (src/kernels/optim/adam.cpp) write the same maths in PyTorch's implementation's order (a lerp
// for m, the bias corrections folded into the step size), which can move a result by a few float
// roundings (docs/semantics.md#kernel-sets).
#include "tapegrad/optim/adam.hpp"

#include <cmath>

#include "adam_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

// ---- the reference kernel -----------------------------------------------------------------------

// g = ±grad (+ l2·θ)          θ = θ·decay                   (AdamW's decoupled decay first)
// m = β1·m + (1 − β1)·g       v = β2·v + (1 − β2)·g²         vmax = max(vmax, v) if amsgrad
// m̂ = m / (1 − β1^t)          v̂ = v (or vmax) / (1 − β2^t)   θ = θ − lr·m̂ / (sqrt(v̂) + eps)
void adam_step(const AdamStep& h, std::size_t n, float* theta, const float* grad, float* m,
               float* v, float* vmax) {
  // Every scalar is a Python number to PyTorch: computed in double, cast to float once.
  const float lr = float(h.lr), b1 = float(h.beta1), b2 = float(h.beta2), eps = float(h.eps);
  const float w1 = float(1.0 - h.beta1), w2 = float(1.0 - h.beta2);
  const float bc1 = float(1.0 - std::pow(h.beta1, double(h.step)));
  const float bc2 = float(1.0 - std::pow(h.beta2, double(h.step)));
  for (std::size_t i = 0; i < n; ++i) {
    float g = h.maximize ? -grad[i] : grad[i];
    if (h.l2 != 0.0) g += float(h.l2) * theta[i];
    theta[i] *= float(h.decay);
    m[i] = b1 * m[i] + w1 * g;
    v[i] = b2 * v[i] + w2 * g * g;
    float s = v[i];
    if (vmax) s = vmax[i] = (std::isnan(s) || s > vmax[i]) ? s : vmax[i];  // NaN propagates
    theta[i] -= lr * (m[i] / bc1) / (std::sqrt(s / bc2) + eps);
  }
}

// ---- the optimizers -----------------------------------------------------------------------------

namespace {

// Lazily creates p's state: m = v = 0, t = 0 (and vmax = 0 once amsgrad is on).
AdamState& state_for(std::optional<AdamState>& slot, const Parameter& p, bool amsgrad) {
  if (!slot) slot = AdamState{0, zeros_like(p), zeros_like(p), std::nullopt};
  if (amsgrad && !slot->max_exp_avg_sq) slot->max_exp_avg_sq = zeros_like(p);
  return *slot;
}

// Every gradient is checked before any parameter changes: a refused step changes nothing.
void check_no_sparse_grads(const Optimizer& opt, const char* pytorch_text, const char* hint) {
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g)
    for (const Parameter& p : opt.params(g))
      if (p.grad_is_sparse())
        fail<TypeError>(pytorch_text, " | ", opt.type_name(), ": ", param_label(p),
                        " has a row-sparse gradient", hint);
}

}  // namespace

// ---- the options' checks (the same for Adam and AdamW) -----------------------------------------

template <class Defaults>
void AdamOptionsOf<Defaults>::check(const std::string& where) const {
  // Written as PyTorch's `not 0.0 <= x`, so that NaN is refused too.
  check_hyper(0.0 <= lr(), "Invalid learning rate", lr(), where, "lr >= 0");
  check_hyper(0.0 <= eps(), "Invalid epsilon value", eps(), where, "eps >= 0");
  check_betas(betas(), where);
  check_hyper(0.0 <= weight_decay(), "Invalid weight_decay value", weight_decay(), where,
              "weight_decay >= 0");
}

template class AdamOptionsOf<AdamDefaults>;
template class AdamOptionsOf<AdamWDefaults>;

// ---- the steps -----------------------------------------------------------------------------------

template <class Options>
void AdamOptimizerOf<Options>::step_with(WeightDecay weight_decay) {
  autograd::NoGradGuard no_grad;                   // updating weights is not part of the model
  const auto update = kernels::pick<adam_step>();  // the set in use
  std::size_t id = 0;
  for (std::size_t g = 0; g < this->num_param_groups(); ++g) {
    const Options& o = this->options(g);
    const auto [beta1, beta2] = o.betas();
    // Adam (l2): the kernel adds wd·θ to the gradient. AdamW (decoupled): θ ← θ·(1 − lr·wd)
    // first, then the Adam update with no decay term in the gradient.
    const bool decoupled = weight_decay == WeightDecay::decoupled;
    const double l2 = decoupled ? 0.0 : o.weight_decay();
    const double decay = decoupled ? 1.0 - o.lr() * o.weight_decay() : 1.0;
    for (const Parameter& p : this->params(g)) {
      const std::size_t i = id++;
      // No gradient: no update, no state, no step count, and no decay either, as in PyTorch.
      if (!p.has_grad()) continue;
      AdamState& s = state_for(this->state_slot(i), p, o.amsgrad());
      s.step += 1;
      const AdamStep h{o.lr(), beta1, beta2, o.eps(), l2, decay, s.step, o.maximize()};
      float* theta = p.mutable_data().data();  // one version bump per step
      float* vmax = o.amsgrad() ? s.max_exp_avg_sq->data() : nullptr;
      update(h, p.numel(), theta, p.grad().data(), s.exp_avg.data(), s.exp_avg_sq.data(), vmax);
    }
  }
}

void Adam::step() {
  check_no_sparse_grads(
      *this, "Adam does not support sparse gradients, please consider SparseAdam instead", "");
  step_with(WeightDecay::l2);
}

void AdamW::step() {
  check_no_sparse_grads(*this, "AdamW does not support sparse gradients",
                        "; use SparseAdam or SGD for it");
  step_with(WeightDecay::decoupled);
}

}  // namespace tapegrad::optim
