// src/optim/clip_grad.cpp
//
// clip_grad_norm_ (PyTorch's torch.nn.utils.clip_grad_norm_). The total norm is the p-norm of the
// per-parameter p-norms, which equals the p-norm of all gradients concatenated. Accumulated in
// double, so that 10M squared float32 values do not lose the small ones; the scale is cast to float
// once, as PyTorch's float32 clip coefficient is.
#include "tapegrad/optim/clip_grad.hpp"

#include <algorithm>
#include <cmath>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

namespace {

// The p-norm of n values, PyTorch's vector_norm: p = inf → max |x|, p = −inf → min |x|,
// p = 0 → the count of non-zeros, else (Σ |x|^p)^(1/p).
template <class T>
double p_norm(const T* x, std::size_t n, double p) {
  if (std::isinf(p)) {
    double best = n == 0 ? 0.0 : std::abs(double(x[0]));
    for (std::size_t i = 0; i < n; ++i) {
      const double a = std::abs(double(x[i]));
      if (std::isnan(a)) return a;  // max and min propagate NaN, as torch's do
      best = p > 0 ? std::max(best, a) : std::min(best, a);
    }
    return best;
  }
  if (p == 2.0) {                           // the common case, in four lanes (i % 4)
    double lane[4] = {0.0, 0.0, 0.0, 0.0};  // added at the end: a fixed order that
    std::size_t i = 0;                      // vectorises; one running sum waits for
    for (; i + 4 <= n; i += 4)              // each addition
      for (std::size_t l = 0; l < 4; ++l) lane[l] += double(x[i + l]) * double(x[i + l]);
    for (; i < n; ++i) lane[i % 4] += double(x[i]) * double(x[i]);
    return std::sqrt((lane[0] + lane[1]) + (lane[2] + lane[3]));
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = std::abs(double(x[i]));
    if (p == 0.0)
      sum += a != 0.0 ? 1.0 : 0.0;
    else if (p == 1.0)
      sum += a;
    else if (p == 2.0)
      sum += a * a;
    else
      sum += std::pow(a, p);
  }
  if (p == 0.0 || p == 1.0) return sum;
  return p == 2.0 ? std::sqrt(sum) : std::pow(sum, 1.0 / p);
}

double grad_norm(const Parameter& p, double norm_type) {
  if (!p.grad_is_sparse()) return p_norm(p.grad().data(), p.numel(), norm_type);
  const RowSparseGrad g = p.sparse_grad().coalesce();  // repeated rows sum first, as when dense
  return p_norm(g.values.data(), g.values.size(), norm_type);
}

}  // namespace

double clip_grad_norm_(const std::vector<Parameter>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  // Not checked by PyTorch 1.13: a negative max_norm would make the scale negative and flip the
  // sign of every gradient (the next step would climb the loss), a NaN one make them all NaN.
  if (!(max_norm >= 0.0))
    fail<ValueError>("clip_grad_norm_: expected max_norm >= 0, got ", py_float(max_norm),
                     "; a negative max_norm would flip the sign of every gradient");
  std::vector<Parameter> with_grad;
  std::vector<double> norms;
  for (const Parameter& p : parameters)
    if (p.has_grad()) {
      with_grad.push_back(p);
      norms.push_back(grad_norm(p, norm_type));
    }
  if (with_grad.empty()) return 0.0;
  const double total = p_norm(norms.data(), norms.size(), norm_type);

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
      for (float& v : g.values) v *= c;
      p.zero_grad();
      p.accumulate_grad(g, "clip_grad_norm_");
    } else {
      Array g = p.grad();
      for (float& v : g) v *= c;
      p.set_grad(std::move(g));
    }
  }
  return total;
}

}  // namespace tapegrad::optim
