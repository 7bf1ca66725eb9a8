// include/tapegrad/optim/optimizer.hpp
//
// The base of every optimizer (docs/semantics.md#optimizers). An optimizer holds parameter groups:
// lists of Parameters, each with its own hyper-parameters (one group when built from a plain list).
// A parameter's integer id is its position across the groups, in construction order; state and
// state dicts are keyed by it, as in PyTorch. The training loop (the tutorials' order):
//
//     loss.backward();  opt.step();  opt.zero_grad();  sched.step();
//
// step() skips a parameter whose gradient is null (no update, no state, no step count) and updates
// one whose gradient is present, even if all zero. Optimizers take std::vector<Parameter>, never
// Buffer or Tensor: handing a buffer to an optimizer does not compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tapegrad/parameter.hpp"

namespace tapegrad::optim {

/// One hyper-parameter as PyTorch's param_groups hold it: a number ("lr"), a flag ("amsgrad")
/// or a list of numbers ("betas"). JSON-able as is.
using HyperValue = std::variant<double, bool, std::vector<double>>;
/// A group's hyper-parameters by PyTorch's names: {"lr": 0.001, "betas": [0.9, 0.999], ...}.
using HyperParams = std::map<std::string, HyperValue>;

/// PyTorch's optimizer.state[p] for one parameter: its step count (Adam family; SGD keeps none)
/// and its state tensors ("exp_avg", "exp_avg_sq", ..., or "momentum_buffer"), each of the
/// parameter's shape. On disk (docs/checkpoints.md): `state.{id}.step` (I64, shape ()) and
/// `state.{id}.{name}` (F32).
struct ParamState {
  std::optional<std::int64_t> step;
  std::vector<std::pair<std::string, Array>> tensors;

  /// The tensor called `name`, or nullptr.
  const Array* find(const std::string& name) const;
  Array* find(const std::string& name);
};

/// One entry of PyTorch's state_dict()["param_groups"]: the hyper-parameters and the ids.
struct ParamGroupState {
  HyperParams options;
  std::vector<std::size_t> params;
};

/// What Optimizer::state_dict() returns and load_state_dict() takes: a snapshot (copies), shaped
/// like PyTorch's {"state": {id: {...}}, "param_groups": [...]}, plus the optimizer's type name
/// (on disk: `__metadata__` "optimizer" and "param_groups", docs/checkpoints.md).
struct OptimizerState {
  std::string optimizer;                    ///< "Adam", "AdamW", "SGD", "SparseAdam"
  std::map<std::size_t, ParamState> state;  ///< only parameters that have state
  std::vector<ParamGroupState> param_groups;
};

class Optimizer {
 public:
  /// Which state a parameter has: whether it keeps a step count, the tensor names it must have
  /// and those it may have (max_exp_avg_sq). load_state_dict checks loaded state against it.
  struct StateLayout {
    bool has_step = false;
    std::vector<std::string> required;
    std::vector<std::string> optional;
  };

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;  // state can be large; schedulers hold a reference
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient, under NoGradGuard.
  virtual void step() = 0;
  /// Drops every gradient (set_to_none, the default) or zero-fills it in place.
  void zero_grad(bool set_to_none = true);

  const std::string& type_name() const { return type_name_; }  ///< "Adam"
  std::size_t num_param_groups() const { return groups_.size(); }
  /// The parameters of group `group`, in order (PyTorch's param_groups[group]["params"]).
  const std::vector<Parameter>& params(std::size_t group) const;
  /// p's id (its position across the groups); throws ValueError if p is not optimized here.
  std::size_t param_id(const Parameter& p) const;
  /// The learning rate of a group: what schedulers read and write.
  virtual double lr(std::size_t group) const = 0;
  virtual void set_lr(std::size_t group, double lr) = 0;

  /// A copy of the hyper-parameters and of every parameter's state, shaped like PyTorch's
  /// Optimizer.state_dict() (https://pytorch.org/docs/stable/optim.html).
  OptimizerState state_dict() const;
  /// Replaces hyper-parameters and state. Checks, before changing anything, with PyTorch's texts
  /// where it has them: the optimizer type, the number and sizes of the groups, every group's
  /// hyper-parameters, and every state entry (its id, its step, its tensor names and shapes).
  /// Throws ValueError; on failure the optimizer is unchanged.
  void load_state_dict(const OptimizerState& state);
  /// The same, taking the state's tensors instead of copying them: a checkpoint's load moves the
  /// moments it read into the optimizer, so they are in memory once.
  void load_state_dict(OptimizerState&& state);
  /// The checks of load_state_dict alone: throws what it would throw, changes nothing. A caller
  /// that loads several things all or nothing checks each first.
  void check_state_dict(const OptimizerState& state) const;

 protected:
  /// Checks the groups (PyTorch's rules; PyTorch only warns about a duplicate within a group): at
  /// least one group, no parameter twice in a group or in two groups, no undefined handle.
  Optimizer(std::string type_name, std::vector<std::vector<Parameter>> groups);
  /// The list of a single-group optimizer, checked to be non-empty (PyTorch's first check).
  static std::vector<Parameter> non_empty(std::vector<Parameter> params);

  /// Throws IndexError unless every row id of p's row-sparse gradient is in [0, rows): a
  /// gradient built by hand (accumulate_grad) is not checked before it reaches an optimizer.
  static void check_sparse_rows(const Parameter& p, const std::string& where);

  std::size_t num_params() const { return num_params_; }
  /// Throws IndexError unless `group` < num_param_groups().
  void check_group(std::size_t group) const;
  /// The parameter with id `id` (its position across the groups).
  const Parameter& param(std::size_t id) const;

  // ---- what each optimizer provides for state_dict / load_state_dict ----
  virtual StateLayout state_layout() const = 0;
  virtual HyperParams hyper_params(std::size_t group) const = 0;
  /// Throws ValueError, naming `where`, if `h` lacks a key, has an unknown one, or holds an
  /// invalid value (the constructor's texts).
  virtual void check_hyper_params(const HyperParams& h, const std::string& where) const = 0;
  /// Sets a group's hyper-parameters from an `h` that passed check_hyper_params.
  virtual void set_hyper_params(std::size_t group, const HyperParams& h) = 0;
  virtual std::optional<ParamState> param_state(std::size_t id) const = 0;
  /// Sets (or, with nullptr, clears) a parameter's state from a checked ParamState, taking its
  /// tensors.
  virtual void set_param_state(std::size_t id, ParamState* s) = 0;

 private:
  /// The checks of load_state_dict; for each parameter (by id), the loaded state's key or none.
  std::vector<std::optional<std::size_t>> checked_state_ids(const OptimizerState& loaded) const;

  std::string type_name_;
  std::vector<std::vector<Parameter>> groups_;
  std::size_t num_params_ = 0;
};

// ---- the bookkeeping every optimizer shares ------------------------------------------------------

/// Groups with their options, per-parameter state created at first use, the learning rate that
/// schedulers read and write, and the six state-dict hooks: written once, here. An optimizer is
/// then its options, its state and its step() (adam.hpp, sgd.hpp, sparse_adam.hpp):
///
///   Options   hand-written chainable setters, lr() among them, plus
///               void check(const std::string& where) const;            the constructor's checks
///               HyperParams to_hyper() const;                           PyTorch's param_groups entry
///               static Options from_hyper(const HyperParams&, const std::string& where);
///   State     one parameter's state, plus
///               static StateLayout layout();                            its step count and tensor names
///               ParamState to_param_state() const;                      PyTorch's state[p]
///               static State from_param_state(ParamState&&);            takes its tensors
///
///     class Lion : public OptimizerOf<LionOptions, LionState> {
///      public:
///       explicit Lion(std::vector<Parameter> p, LionOptions o = {}) : OptimizerOf("Lion", std::move(p), o) {}
///       void step() override;        // the formula, then a loop over each parameter
///     };
template <class Options, class State>
class OptimizerOf : public Optimizer {
 public:
  /// A parameter group with its own options (PyTorch's {"params": [...], "lr": ...}).
  struct Group {
    std::vector<Parameter> params;
    Options options;
  };

  Options& options(std::size_t group) {
    check_group(group);
    return options_[group];
  }
  const Options& options(std::size_t group) const {
    check_group(group);
    return options_[group];
  }
  double lr(std::size_t group) const override { return options(group).lr(); }
  void set_lr(std::size_t group, double lr) override { options(group).lr(lr); }
  /// p's state, or nullptr before its first step; throws ValueError if p is not optimized here.
  const State* state(const Parameter& p) const {
    const std::optional<State>& s = state_[param_id(p)];
    return s ? &*s : nullptr;
  }

 protected:
  OptimizerOf(std::string type_name, std::vector<Parameter> params, Options options)
      : OptimizerOf(std::move(type_name),
                    std::vector<Group>{Group{non_empty(std::move(params)), std::move(options)}}) {}
  OptimizerOf(std::string type_name, std::vector<Group> groups)
      : Optimizer(type_name, checked(type_name, groups)) {
    for (Group& group : groups) options_.push_back(std::move(group.options));
    state_.resize(num_params());
  }

  /// The state of the parameter with id `id`: empty until the step() that creates it.
  std::optional<State>& state_slot(std::size_t id) { return state_[id]; }

  StateLayout state_layout() const override { return State::layout(); }
  HyperParams hyper_params(std::size_t group) const override { return options(group).to_hyper(); }
  void check_hyper_params(const HyperParams& h, const std::string& where) const override {
    Options::from_hyper(h, where);
  }
  void set_hyper_params(std::size_t group, const HyperParams& h) override {
    options(group) = Options::from_hyper(h, type_name());
  }
  std::optional<ParamState> param_state(std::size_t id) const override {
    if (!state_[id]) return std::nullopt;
    return state_[id]->to_param_state();
  }
  void set_param_state(std::size_t id, ParamState* s) override {
    if (s == nullptr)
      state_[id].reset();
    else
      state_[id] = State::from_param_state(std::move(*s));
  }

 private:
  static std::vector<std::vector<Parameter>> checked(const std::string& type_name,
                                                     const std::vector<Group>& groups) {
    std::vector<std::vector<Parameter>> params;
    for (const Group& group : groups) {
      group.options.check(type_name);
      params.push_back(group.params);
    }
    return params;
  }

  std::vector<Options> options_;
  std::vector<std::optional<State>> state_;  // by parameter id
};

// ---- helpers for reading HyperParams (used by the optimizers and by checkpoint loaders) ----

/// The number stored under `key`; throws ValueError naming `where` if it is missing or not a number.
double hyper_number(const HyperParams& h, const std::string& key, const std::string& where);
/// The flag stored under `key`; throws ValueError if it is missing or not a flag.
bool hyper_flag(const HyperParams& h, const std::string& key, const std::string& where);
/// The pair stored under `key` ("betas"); throws ValueError unless it is a list of two numbers.
std::pair<double, double> hyper_pair(const HyperParams& h, const std::string& key,
                                     const std::string& where);
/// Throws ValueError if `h` has a key outside `known`.
void check_hyper_keys(const HyperParams& h, const std::vector<std::string>& known,
                      const std::string& where);

/// Throws ValueError with PyTorch's texts unless 0 <= β1 < 1 and 0 <= β2 < 1 (NaN is refused).
void check_betas(std::pair<double, double> betas, const std::string& where);

/// A zero-filled array of p's shape: the starting value of a moment or a momentum buffer.
Array zeros_like(const Parameter& p);

/// How messages name a parameter: "'lut.weight'" when it has a name, else "tensor (10, 3)".
std::string param_label(const Parameter& p);

using tapegrad::py_float;  // errors.hpp: hyper-parameters print as Python prints a float

}  // namespace tapegrad::optim
