// src/kernels/optim/sparse_adam.cpp
//
// SparseAdam's fast kernel, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md) and registered as the set's version of optim::sparse_adam_step: the reference's
// maths (src/optim/sparse_adam.cpp) in PyTorch's order of operations, one pass per row, the rows
// split over the threads (the rows of a coalesced gradient are distinct). Bias corrections are
// computed in double and cast to float once.
#include <cmath>

#include "../../core/parallel.hpp"
#include "../../optim/sparse_adam_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error "compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// For the rows r of the coalesced gradient G only:
//   g   = maximize ? −G_r : G_r
//   Δm  = (g − m_r)·(1 − β1) ;     m_r = m_r + Δm
//   Δv  = (g² − v_r)·(1 − β2) ;    v_r = v_r + Δv
//   θ_r = θ_r + (−step_size)·(m_r / (sqrt(v_r) + eps)),   step_size = lr·sqrt(bc2)/bc1
// (m + (1 − β)(g − m) is β·m + (1 − β)·g written as a correction, which is what lets the rows
// outside G simply stay as they are.) Rows not in G: m, v and θ unchanged, bit for bit.
void step(const optim::SparseAdamStep& h, std::size_t rows, std::size_t dim,
          const std::int64_t* ids, const float* values, float* theta, float* m, float* v) {
  const double bc1 = 1.0 - std::pow(h.beta1, double(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, double(h.step));
  const double step_size = h.lr * std::sqrt(bc2) / bc1;
  // The scalars as locals, in registers: read through a struct inside the loop, they might alias
  // the floats it stores, so the compiler reloaded them per element and left the loop scalar.
  const float w1 = float(1.0 - h.beta1), w2 = float(1.0 - h.beta2),
              neg_step_size = float(-step_size), eps = float(h.eps);
  const float sign = h.maximize ? -1.0f : 1.0f;  // a factor rather than a select: it vectorises
  detail::parallel_for(rows, detail::rows_grain(dim), [&](std::size_t first, std::size_t last) {
    const float factor = sign;
    for (std::size_t r = first; r < last; ++r) {
      const std::size_t offset = static_cast<std::size_t>(ids[r]) * dim;
      const float* grad = values + r * dim;
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

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::optim::sparse_adam_step, step);
