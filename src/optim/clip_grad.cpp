// src/optim/clip_grad.cpp
//
// clip_grad_norm_ (PyTorch's torch.nn.utils.clip_grad_norm_). The total norm is the p-norm of the
// per-parameter p-norms, which equals the p-norm of all gradients concatenated. Accumulated in
// double, so that 10M squared float32 values do not lose the small ones; the scale is cast to float
// once, as PyTorch's float32 clip coefficient is. The norms and the scaling are the kernels of the
// set in use (clip_grad_reference.cpp holds them as plain loops, clip_grad_fast.cpp the fast ones).
#include "tapegrad/optim/clip_grad.hpp"

#include <algorithm>
#include <cmath>

#include "clip_grad_kernels.hpp"
#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

namespace {

double grad_norm(const kernels::ClipGradKernels& kernel, const Parameter& p, double norm_type) {
  if (!p.grad_is_sparse()) return kernel.norm(p.grad().data(), p.numel(), norm_type);
  const RowSparseGrad g = p.sparse_grad().coalesce();  // repeated rows sum first, as when dense
  return kernel.norm(g.values.data(), g.values.size(), norm_type);
}

}  // namespace

double clip_grad_norm_(const std::vector<Parameter>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  // Not checked by PyTorch 1.13: a negative max_norm would make the scale negative and flip the
  // sign of every gradient (the next step would climb the loss), a NaN one make them all NaN.
  if (!(max_norm >= 0.0))
    fail<ValueError>("clip_grad_norm_: expected max_norm >= 0, got ", py_float(max_norm),
                     "; a negative max_norm would flip the sign of every gradient");
  const kernels::ClipGradKernels& kernel = kernels::clip_grad_kernels();  // the set in use
  std::vector<Parameter> with_grad;
  std::vector<double> norms;
  for (const Parameter& p : parameters)
    if (p.has_grad()) {
      with_grad.push_back(p);
      norms.push_back(grad_norm(kernel, p, norm_type));
    }
  if (with_grad.empty()) return 0.0;
  const double total = kernel.norm_of_norms(norms.data(), norms.size(), norm_type);

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
      kernel.scale(g.values.data(), g.values.size(), c);
      p.zero_grad();
      p.accumulate_grad(g, "clip_grad_norm_");
    } else {
      Array g = p.grad();
      kernel.scale(g.data(), g.size(), c);
      p.set_grad(std::move(g));
    }
  }
  return total;
}

}  // namespace tapegrad::optim
