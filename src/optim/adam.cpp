// src/optim/adam.cpp
//
// Adam and AdamW (docs/semantics.md#optimizers): the checks, the state, and one call per parameter
// per step to the same kernel, kernels::adam_kernels().step, of the kernel set in use
// (adam_reference.cpp holds the maths as plain loops, adam_fast.cpp the fast version).
#include "tapegrad/optim/adam.hpp"

#include "adam_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

namespace {

// The step of a parameter at its step count t, from a group's options.
template <class Options>
kernels::AdamStep adam_step(const Options& o, std::int64_t t, double l2, double decay) {
  const auto [beta1, beta2] = o.betas();
  return kernels::AdamStep{o.lr(), beta1, beta2, o.eps(), l2, decay, t, o.maximize()};
}

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

void Adam::step() {
  autograd::NoGradGuard no_grad;  // updating weights is not part of the model
  check_no_sparse_grads(
      *this, "Adam does not support sparse gradients, please consider SparseAdam instead", "");
  const kernels::AdamKernels& kernel = kernels::adam_kernels();  // the set in use
  std::size_t id = 0;
  for (std::size_t g = 0; g < num_param_groups(); ++g) {
    const AdamOptions& o = options(g);
    for (const Parameter& p : params(g)) {
      const std::size_t i = id++;
      if (!p.has_grad()) continue;  // no gradient: no update, no state, no step count
      AdamState& s = state_for(state_slot(i), p, o.amsgrad());
      s.step += 1;
      const kernels::AdamStep h = adam_step(o, s.step, /*l2=*/o.weight_decay(), /*decay=*/1.0);
      float* theta = p.mutable_data().data();  // one version bump per step
      float* vmax = o.amsgrad() ? s.max_exp_avg_sq->data() : nullptr;
      kernel.step(h, p.numel(), theta, p.grad().data(), s.exp_avg.data(), s.exp_avg_sq.data(),
                  vmax);
    }
  }
}

void AdamW::step() {
  autograd::NoGradGuard no_grad;
  check_no_sparse_grads(*this, "AdamW does not support sparse gradients",
                        "; use SparseAdam or SGD for it");
  const kernels::AdamKernels& kernel = kernels::adam_kernels();  // the set in use
  std::size_t id = 0;
  for (std::size_t g = 0; g < num_param_groups(); ++g) {
    const AdamWOptions& o = options(g);
    for (const Parameter& p : params(g)) {
      const std::size_t i = id++;
      if (!p.has_grad()) continue;  // no gradient: no decay either, as in PyTorch
      AdamState& s = state_for(state_slot(i), p, o.amsgrad());
      s.step += 1;
      // Decoupled: θ ← θ·(1 − lr·wd) first, then the Adam update with no decay term in g.
      const double decay = 1.0 - o.lr() * o.weight_decay();
      const kernels::AdamStep h = adam_step(o, s.step, /*l2=*/0.0, decay);
      float* theta = p.mutable_data().data();
      float* vmax = o.amsgrad() ? s.max_exp_avg_sq->data() : nullptr;
      kernel.step(h, p.numel(), theta, p.grad().data(), s.exp_avg.data(), s.exp_avg_sq.data(),
                  vmax);
    }
  }
}

}  // namespace tapegrad::optim
