// include/tapegrad/optim/lr_scheduler.hpp
//
// LambdaLR, the Noam schedule of "Attention Is All You Need", and the cosine schedule with linear
// warm-up that GPT training uses (nanoGPT's get_lr); docs/semantics.md#learning-rate-schedules.
// LambdaLR sets each group's lr = base_lr · f(e), where base_lr is the group's lr when the
// scheduler was built and e counts scheduler steps (0 at construction). The tutorials' loop and
// schedule:
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

/// nanoGPT's get_lr(step) / learning_rate, a factor for LambdaLR, computed in double:
///   step < warmup              (step + 1) / (warmup + 1)                      linear warm-up
///   step > max_steps           min_lr_ratio                                   (min_lr / learning_rate)
///   otherwise                  min_lr_ratio + c (1 - min_lr_ratio),  c = 0.5 (1 + cos(pi r)),
///                              r = (step - warmup) / (max_steps - warmup)     cosine decay
/// So lr = base_lr * factor is nanoGPT's lr for the step about to be taken (LambdaLR calls f(0)
/// for the first step). Throws ValueError unless 0 <= warmup < max_steps, 0 <= min_lr_ratio <= 1
/// and step >= 0.
///     optim::LambdaLR sched(opt, [](std::int64_t e) { return optim::cosine_with_warmup(e, 100, 2000, 0.1); });
double cosine_with_warmup(std::int64_t step, std::int64_t warmup, std::int64_t max_steps,
                          double min_lr_ratio);

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
