// src/optim/lr_scheduler.cpp
//
// LambdaLR (PyTorch's torch.optim.lr_scheduler.LambdaLR), the Noam rate (The Annotated
// Transformer's) and nanoGPT's cosine schedule with warm-up. Rates are computed in double; the
// optimizer casts lr to float where it meets the data.
#include "tapegrad/optim/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tapegrad::optim {

double noam(std::int64_t step, std::int64_t d_model, double factor, std::int64_t warmup) {
  check<ValueError>(d_model > 0, "noam: expected d_model > 0, got ", d_model);
  check<ValueError>(warmup > 0, "noam: expected warmup > 0, got ", warmup);
  check<ValueError>(step >= 0, "noam: expected step >= 0, got ", step);
  // The Annotated Transformer's rate(), in its order of operations. Step 0 would divide by zero
  // in step^−0.5; the scheduler calls f(0) at construction, so it counts as step 1.
  const double s = step == 0 ? 1.0 : double(step);
  return factor * (std::pow(double(d_model), -0.5) *
                   std::min(std::pow(s, -0.5), s * std::pow(double(warmup), -1.5)));
}

double cosine_with_warmup(std::int64_t step, std::int64_t warmup, std::int64_t max_steps,
                          double min_lr_ratio) {
  check<ValueError>(warmup >= 0 && warmup < max_steps,
                    "cosine_with_warmup: expected 0 <= warmup < max_steps, got warmup ", warmup,
                    " and max_steps ", max_steps);
  check<ValueError>(min_lr_ratio >= 0.0 && min_lr_ratio <= 1.0,
                    "cosine_with_warmup: expected min_lr_ratio in [0, 1], got ", min_lr_ratio);
  check<ValueError>(step >= 0, "cosine_with_warmup: expected step >= 0, got ", step);
  // nanoGPT's get_lr, divided by learning_rate, in its order of operations.
  if (step < warmup) return double(step + 1) / double(warmup + 1);
  if (step > max_steps) return min_lr_ratio;
  const double decay_ratio = double(step - warmup) / double(max_steps - warmup);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * decay_ratio));  // 1 -> 0
  return min_lr_ratio + coeff * (1.0 - min_lr_ratio);
}

LambdaLR::LambdaLR(Optimizer& optimizer, LrLambda lr_lambda)
    : LambdaLR(optimizer, std::vector<LrLambda>(optimizer.num_param_groups(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas)
    : optimizer_(optimizer), lr_lambdas_(std::move(lr_lambdas)) {
  check<ValueError>(
      lr_lambdas_.size() == optimizer_.num_param_groups(), "Expected ",
      optimizer_.num_param_groups(), " lr_lambdas, but got ", lr_lambdas_.size(),
      " | LambdaLR: give one function for every parameter group, or a single one for all");
  for (std::size_t g = 0; g < lr_lambdas_.size(); ++g) {
    check<ValueError>(static_cast<bool>(lr_lambdas_[g]), "LambdaLR: expected a function for group ",
                      g, ", got an empty std::function");
    base_lrs_.push_back(optimizer_.lr(g));  // the rate the user gave becomes the base
  }
  apply();  // epoch 0: lr = base_lr · f(0)
}

void LambdaLR::apply() {
  last_lr_.clear();
  for (std::size_t g = 0; g < base_lrs_.size(); ++g) {
    const double lr = base_lrs_[g] * lr_lambdas_[g](last_epoch_);
    optimizer_.set_lr(g, lr);
    last_lr_.push_back(lr);
  }
}

void LambdaLR::step() {
  last_epoch_ += 1;
  apply();
}

LambdaLRState LambdaLR::state_dict() const { return LambdaLRState{last_epoch_, base_lrs_}; }

void LambdaLR::load_state_dict(const LambdaLRState& state) {
  check<ValueError>(state.base_lrs.size() == base_lrs_.size(),
                    "LambdaLR.load_state_dict: expected ", base_lrs_.size(),
                    " base_lrs (one per parameter group), got ", state.base_lrs.size());
  std::vector<double> last_lr;  // computed first: f may throw
  for (std::size_t g = 0; g < state.base_lrs.size(); ++g)
    last_lr.push_back(state.base_lrs[g] * lr_lambdas_[g](state.last_epoch));
  last_epoch_ = state.last_epoch;
  base_lrs_ = state.base_lrs;
  last_lr_ = std::move(last_lr);
}

}  // namespace tapegrad::optim
