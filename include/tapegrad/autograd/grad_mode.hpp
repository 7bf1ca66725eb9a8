// include/tapegrad/autograd/grad_mode.hpp
//
// The two per-thread switches an op consults before it records: grad mode (torch.no_grad) and
// anomaly mode (torch.autograd.detect_anomaly). src/autograd/grad_mode.cpp, anomaly.cpp.
#pragma once

namespace tapegrad::autograd {

/// Whether ops on this thread record (true unless a NoGradGuard is alive).
bool grad_enabled();
/// Stops recording on this thread while alive (RAII, nestable), like torch.no_grad().
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
/// Turns recording back on while alive (RAII, nestable), like torch.enable_grad(): what
/// autograd::checkpoint's recompute runs under, inside a backward (which records nothing).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

/// While alive, every op checks its output (and backward every gradient) for NaN and Inf and
/// throws AutogradError naming the first op that produced one (torch.autograd.detect_anomaly).
class AnomalyGuard {
 public:
  AnomalyGuard();
  ~AnomalyGuard();
  AnomalyGuard(const AnomalyGuard&) = delete;
  AnomalyGuard& operator=(const AnomalyGuard&) = delete;

 private:
  bool previous_;
};
bool anomaly_enabled();

}  // namespace tapegrad::autograd
