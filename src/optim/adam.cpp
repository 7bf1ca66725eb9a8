// src/optim/adam.cpp
//
// Adam and AdamW in PyTorch's order of operations (docs/semantics.md#optimizers). Both classes call the
// same kernel, adam_update(), once per parameter per step: one pass over contiguous memory that
// reads θ, g, m, v (and vmax) once and writes θ, m, v once, with no temporaries (bench/w3_adam_step).
// Scalars (bias corrections, step size, the AdamW decay factor) are computed in double, per
// parameter, and cast to float once, where they meet the float32 data, as PyTorch does with
// Python numbers. The build never uses -ffast-math: the order below is the order executed.
#include "tapegrad/optim/adam.hpp"

#include <cmath>

#include "../parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::optim {

namespace {

// The float32 scalars of one parameter's step.
struct AdamScalars {
  float w1;             // 1 − β1: the weight with which m moves towards g
  float one_minus_w1;   // 1 − w1, computed in float as PyTorch's lerp does
  float beta2, w2;      // β2 and 1 − β2
  float l2;             // Adam's coupled weight decay (0 for AdamW)
  float decay;          // AdamW's 1 − lr·wd (1 for Adam, which leaves θ exact)
  float neg_step_size;  // −lr / bc1,   bc1 = 1 − β1^t
  float sqrt_bc2;       // sqrt(bc2),   bc2 = 1 − β2^t
  float eps;
  bool maximize;
};

// adam_update: one Adam step of n elements, in this order:
//   g  = maximize ? −grad : grad
//   g  = g + l2·θ                                 if l2 ≠ 0 (Adam's L2, with θ before the step)
//   θ  = θ·decay                                  (AdamW's decoupled decay; Adam passes 1)
//   m  = lerp(m, g, w1):  w1 < 0.5 ? m + w1·(g − m) : g − (g − m)·(1 − w1)     (PyTorch 2.x)
//   v  = v·β2 + (1 − β2)·g·g
//   s  = amsgrad ? (vmax = max(vmax, v)) : v      max of the raw v; NaN propagates as torch.maximum
//   θ  = θ + ((−lr/bc1)·m) / (sqrt(s)/sqrt(bc2) + eps)
// m and v start at zero, so early averages are biased towards zero; dividing m by bc1 and v by bc2
// (inside the sqrt) undoes that. eps is added AFTER the correction, PyTorch's placement: it keeps
// the first step ≈ lr·sign(g) however small g is. vmax is nullptr unless amsgrad.
// Elements [begin, end) only: adam_update splits the parameter over the threads.
void adam_update_range(const AdamScalars k, std::size_t begin, std::size_t end, float* theta,
                       const float* grad, float* m, float* v, float* vmax) {
  // (−1)·grad is exactly −grad; a float factor, unlike a bool select, lets the loop vectorise.
  const float sign = k.maximize ? -1.0f : 1.0f;
  for (std::size_t i = begin; i < end; ++i) {
    float g = sign * grad[i];
    if (k.l2 != 0.0f) g = g + k.l2 * theta[i];
    const float t = theta[i] * k.decay;
    const float mi = k.w1 < 0.5f ? m[i] + k.w1 * (g - m[i]) : g - (g - m[i]) * k.one_minus_w1;
    const float vi = v[i] * k.beta2 + k.w2 * g * g;
    float s = vi;
    if (vmax != nullptr) {
      s = (vi > vmax[i] || std::isnan(vi)) ? vi : vmax[i];
      vmax[i] = s;
    }
    m[i] = mi;
    v[i] = vi;
    theta[i] = t + k.neg_step_size * mi / (std::sqrt(s) / k.sqrt_bc2 + k.eps);
  }
}

// One Adam step over n elements: bound by memory bandwidth (28 bytes per element), so split
// over the threads in blocks of at least 16 Ki elements (tens of microseconds of work each; a
// GPT's matrices, 16 K to 64 K elements, then split too).
void adam_update(const AdamScalars k, std::size_t n, float* theta, const float* grad, float* m,
                 float* v, float* vmax) {
  detail::parallel_for(n, std::size_t{1} << 14, [&](std::size_t begin, std::size_t end) {
    adam_update_range(k, begin, end, theta, grad, m, v, vmax);
  });
}

// The scalars of step t of a parameter, from a group's options (double, then float once).
template <class Options>
AdamScalars scalars(const Options& o, std::int64_t t, double l2, double decay) {
  const auto [beta1, beta2] = o.betas();
  const double bc1 = 1.0 - std::pow(beta1, double(t));
  const double bc2 = 1.0 - std::pow(beta2, double(t));
  const double step_size = o.lr() / bc1;
  const float w1 = float(1.0 - beta1);
  return AdamScalars{
      w1,           1.0f - w1,         float(beta2),          float(1.0 - beta2), float(l2),
      float(decay), float(-step_size), float(std::sqrt(bc2)), float(o.eps()),     o.maximize()};
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
  std::size_t id = 0;
  for (std::size_t g = 0; g < num_param_groups(); ++g) {
    const AdamOptions& o = options(g);
    for (const Parameter& p : params(g)) {
      const std::size_t i = id++;
      if (!p.has_grad()) continue;  // no gradient: no update, no state, no step count
      AdamState& s = state_for(state_slot(i), p, o.amsgrad());
      s.step += 1;
      const AdamScalars k = scalars(o, s.step, /*l2=*/o.weight_decay(), /*decay=*/1.0);
      float* theta = p.mutable_data().data();  // one version bump per step
      float* vmax = o.amsgrad() ? s.max_exp_avg_sq->data() : nullptr;
      adam_update(k, p.numel(), theta, p.grad().data(), s.exp_avg.data(), s.exp_avg_sq.data(),
                  vmax);
    }
  }
}

void AdamW::step() {
  autograd::NoGradGuard no_grad;
  check_no_sparse_grads(*this, "AdamW does not support sparse gradients",
                        "; use SparseAdam or SGD for it");
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
      const AdamScalars k = scalars(o, s.step, /*l2=*/0.0, decay);
      float* theta = p.mutable_data().data();
      float* vmax = o.amsgrad() ? s.max_exp_avg_sq->data() : nullptr;
      adam_update(k, p.numel(), theta, p.grad().data(), s.exp_avg.data(), s.exp_avg_sq.data(),
                  vmax);
    }
  }
}

}  // namespace tapegrad::optim
