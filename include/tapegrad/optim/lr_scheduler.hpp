// include/tapegrad/optim/lr_scheduler.hpp
//
// LambdaLR and the Noam schedule of "Attention Is All You Need" (SPEC 2.11). LambdaLR sets each
// group's lr = base_lr · f(e), where base_lr is the group's lr when the scheduler was built and e
// counts scheduler steps (0 at construction). The tutorials' loop and schedule:
//
//     optim::Adam opt(params, optim::AdamOptions(0.5).betas({0.9, 0.98}).eps(1e-9));
//     optim::LambdaLR sched(opt, [](std::int64_t e) { return optim::noam(e, 512, 1.0, 400); });
//     for (...) { loss.backward(); opt.step(); opt.zero_grad(); sched.step(); }
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// factor · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5), computed in double, with step 0
/// treated as 1 (so LambdaLR can call it at construction). It rises linearly for `warmup` steps,
/// peaks at factor / sqrt(d_model · warmup), then decays as 1/sqrt(step). Throws ValueError
/// if d_model <= 0, warmup <= 0 or step < 0.
double noam(std::int64_t step, std::int64_t d_model, double factor, std::int64_t warmup);

/// What LambdaLR::state_dict() returns (PyTorch's keys; the functions themselves are code, not state).
struct LambdaLRState {
  std::int64_t last_epoch = 0;
  std::vector<double> base_lrs;
};

class LambdaLR {
 public:
  /// The multiplicative factor for epoch e (e = 0, 1, 2, ...).
  using LrLambda = std::function<double(std::int64_t epoch)>;

  /// One f for every group. Keeps a reference to `optimizer`, which must outlive the scheduler.
  /// Sets lr = base_lr · f(0) at once.
  LambdaLR(Optimizer& optimizer, LrLambda lr_lambda);
  /// One f per group; throws ValueError if their number differs from the number of groups.
  LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas);

  /// e ← e + 1 and lr ← base_lr · f(e) in every group. Call it after optimizer.step().
  void step();
  /// The rates this scheduler set last, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  std::int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }

  LambdaLRState state_dict() const;
  /// Restores last_epoch and base_lrs (the optimizer's lr comes back with the optimizer's own
  /// state dict, as in PyTorch). Throws ValueError, changing nothing, if the number of base_lrs
  /// differs from the number of groups.
  void load_state_dict(const LambdaLRState& state);

 private:
  void apply();
  Optimizer& optimizer_;
  std::vector<LrLambda> lr_lambdas_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  std::int64_t last_epoch_ = 0;
};

}  // namespace tapegrad::optim
