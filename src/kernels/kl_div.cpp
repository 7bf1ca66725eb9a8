// src/kernels/kl_div.cpp
//
// kl_div's fast kernels, compiled once per kernel set (namespace tapegrad::kernels::<set>,
// docs/kernels.md). The maths is the reference kernels' (src/ops/kl_div.cpp); what differs is the
// exponential of log_target: exp_f32 (src/kernels/exp_f32.hpp), inline arithmetic the loop can
// vectorise, where std::exp is a library call per element. The reduction adds the losses in
// double, in order, as there.
#include <cmath>
#include <memory>

#include "exp_f32.hpp"
#include "../ops/kl_div_kernels.hpp"

#if !defined(TAPEGRAD_CAPABILITY)
#error \
    "src/kernels/kl_div.cpp is compiled once per kernel set by CMake, with TAPEGRAD_CAPABILITY set"
#endif

namespace tapegrad::kernels::TAPEGRAD_CAPABILITY {
namespace {

// The formula: kl_div_forward's. The losses are made in one loop (the exponentials of log_target
// vectorise), then added in a second.
void forward(const float* x, const float* t, float* loss, float* slope, std::size_t n,
             bool log_target, bool per_element, float divisor) {
  std::unique_ptr<float[]> scratch;  // not zeroed: every element is written
  if (!per_element) scratch = std::make_unique_for_overwrite<float[]>(n);
  float* l = per_element ? loss : scratch.get();
  for (std::size_t i = 0; i < n; ++i) {
    if (log_target) {
      const float et = detail::exp_f32(t[i]);
      l[i] = et * (t[i] - x[i]);
      slope[i] = -et;
    } else {
      const float xlogy = t[i] == 0.0f && !std::isnan(t[i]) ? 0.0f : t[i] * std::log(t[i]);
      l[i] = xlogy - t[i] * x[i];
      slope[i] = -t[i];
    }
  }
  if (per_element) return;
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) total += l[i];
  loss[0] = static_cast<float>(total) / divisor;
}

// The formula: kl_div_backward's.
void backward(const float* dy, const float* slope, float* dx, std::size_t n, bool per_element,
              float divisor) {
  if (per_element) {
    for (std::size_t i = 0; i < n; ++i) dx[i] = slope[i] * dy[i];
  } else {
    const float g = dy[0] / divisor;
    for (std::size_t i = 0; i < n; ++i) dx[i] = slope[i] * g;
  }
}

}  // namespace

}  // namespace tapegrad::kernels::TAPEGRAD_CAPABILITY

TAPEGRAD_FAST_KERNEL(tapegrad::ops::kl_div_forward, forward);
TAPEGRAD_FAST_KERNEL(tapegrad::ops::kl_div_backward, backward);
