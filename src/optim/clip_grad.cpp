// src/optim/clip_grad.cpp
//
// clip_grad_norm_ (PyTorch's torch.nn.utils.clip_grad_norm_). The total norm is the p-norm of the
// per-parameter p-norms, which equals the p-norm of all gradients concatenated. Accumulated in
// double, so that 10M squared float32 values do not lose the small ones; the scale is cast to float
// once, as PyTorch's float32 clip coefficient is. The reference kernels below are the p-norm as
// PyTorch's documentation of vector_norm writes it
// (https://pytorch.org/docs/stable/generated/torch.linalg.vector_norm.html), one element after
// another in double, and the scaling (docs/kernels.md: read this first). kernels::pick takes the
// norms of the kernel set in use: the fast versions (src/kernels/optim/clip_grad.cpp) add the
// squares of the 2-norm in four interleaved lanes, which can move the norm by a few double
// roundings and so the float scale by one rounding (docs/semantics.md#kernel-sets). The scaling has
// no fast version: every set runs the reference's loop.
#include "tapegrad/optim/clip_grad.hpp"

#include <algorithm>
#include <cmath>

#include "clip_grad_kernels.hpp"
#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

// ---- the reference kernels ----------------------------------------------------------------------

namespace {

// p = ±inf: max (min) of |x|;   p = 0: #{x ≠ 0};   else (Σ |x|^p)^(1/p)
template <class T>
double p_norm(const T* x, std::size_t n, double p) {
  if (std::isinf(p)) {
    double best = n == 0 ? 0.0 : std::abs(double(x[0]));
    for (std::size_t i = 0; i < n; ++i) {
      const double a = std::abs(double(x[i]));
      if (std::isnan(a)) return a;  // NaN propagates, as torch's max and min do
      best = p > 0 ? std::max(best, a) : std::min(best, a);
    }
    return best;
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    sum += p == 0.0 ? (x[i] != 0 ? 1.0 : 0.0) : std::pow(std::abs(double(x[i])), p);
  return p == 0.0 ? sum : std::pow(sum, 1.0 / p);
}

}  // namespace

double clip_grad_norm(const float* x, std::size_t n, double p) { return p_norm(x, n, p); }
double clip_grad_norm_of_norms(const double* x, std::size_t n, double p) { return p_norm(x, n, p); }

// x = c·x
void clip_grad_scale(float* x, std::size_t n, float c) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= c;
}

// ---- clip_grad_norm_ ----------------------------------------------------------------------------

namespace {

double grad_norm(decltype(&clip_grad_norm) norm, const Parameter& p, double norm_type) {
  if (!p.grad_is_sparse()) return norm(p.grad().data(), p.numel(), norm_type);
  const RowSparseGrad g = p.sparse_grad().coalesce();  // repeated rows sum first, as when dense
  return norm(g.values.data(), g.values.size(), norm_type);
}

}  // namespace

double clip_grad_norm_(const std::vector<Parameter>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  // Not checked by PyTorch 1.13: a negative max_norm would make the scale negative and flip the
  // sign of every gradient (the next step would climb the loss), a NaN one make them all NaN.
  if (!(max_norm >= 0.0))
    fail<ValueError>("clip_grad_norm_: expected max_norm >= 0, got ", py_float(max_norm),
                     "; a negative max_norm would flip the sign of every gradient");
  // The norms of the set in use, picked once.
  const auto norm = kernels::pick<clip_grad_norm>();
  const auto norm_of_norms = kernels::pick<clip_grad_norm_of_norms>();
  std::vector<Parameter> with_grad;
  std::vector<double> norms;
  for (const Parameter& p : parameters)
    if (p.has_grad()) {
      with_grad.push_back(p);
      norms.push_back(grad_norm(norm, p, norm_type));
    }
  if (with_grad.empty()) return 0.0;
  const double total = norm_of_norms(norms.data(), norms.size(), norm_type);

  if (error_if_nonfinite && !std::isfinite(total)) {
    std::string first;
    for (std::size_t i = 0; i < norms.size() && first.empty(); ++i)
      if (!std::isfinite(norms[i])) first = with_grad[i].describe();
    fail<ValueError>("The total norm of order ", py_float(norm_type),
                     " for gradients from `parameters` is non-finite, so it cannot be clipped | "
                     "clip_grad_norm_: expected a finite total norm, got ",
                     total, "; the first non-finite gradient is ", first,
                     " (error_if_nonfinite=false scales by it anyway)");
  }

  // min(NaN, 1) stays NaN, like torch.clamp: a non-finite norm poisons the gradients visibly.
  const double coef = max_norm / (total + 1e-6);
  const float c = float(std::isnan(coef) ? coef : std::min(coef, 1.0));
  for (const Parameter& p : with_grad) {  // every gradient, even when c is 1
    if (p.grad_is_sparse()) {
      RowSparseGrad g = p.sparse_grad();
      clip_grad_scale(g.values.data(), g.values.size(), c);
      p.zero_grad();
      p.accumulate_grad(g, "clip_grad_norm_");
    } else {
      Array g = p.grad();
      clip_grad_scale(g.data(), g.size(), c);
      p.set_grad(std::move(g));
    }
  }
  return total;
}

}  // namespace tapegrad::optim
