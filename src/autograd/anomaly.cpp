// src/autograd/anomaly.cpp: anomaly mode (torch.autograd.detect_anomaly): while an AnomalyGuard is
// alive, every recorded op's output and every gradient a backward closure produced is checked
// for NaN and Inf, and the first op to produce one is named.
#include <cmath>

#include "../core/tensor_impl.hpp"
#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::autograd {

namespace {
thread_local bool anomaly_mode = false;
}  // namespace

bool anomaly_enabled() { return anomaly_mode; }
AnomalyGuard::AnomalyGuard() : previous_(anomaly_mode) { anomaly_mode = true; }
AnomalyGuard::~AnomalyGuard() { anomaly_mode = previous_; }

namespace detail {

void check_anomaly(const char* op, const Tensor& output) {
  std::size_t bad = 0;
  for (float v : output.data()) bad += !std::isfinite(v);
  check<AutogradError>(bad == 0, "anomaly: ", where(op), ": '", op, "' produced ", bad,
                       " NaN/Inf value(s) in its output of shape ", output.shape(),
                       " (it would be entry #", peek_next_seq(), ")");
}

void check_input_gradients(const EntryBase& e) {
  for (std::size_t i = 0; i < e.inputs.size(); ++i) {
    const TensorImpl& in = TensorAccess::impl(e.inputs[i]);
    if (!in.grad) continue;
    for (float v : *in.grad)
      if (!std::isfinite(v))
        fail<AutogradError>("anomaly: backward of '", e.op, "' (entry #", e.seq,
                            ") produced NaN/Inf in the gradient of its input ", i, ", ",
                            e.inputs[i].describe());
  }
}

}  // namespace detail
}  // namespace tapegrad::autograd
