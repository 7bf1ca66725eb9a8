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
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tapegrad/core/options.hpp"
#include "tapegrad/core/parameter.hpp"

namespace tapegrad::optim {

/// One hyper-parameter as PyTorch's param_groups hold it: a number ("lr"), a flag ("amsgrad")
/// or a list of numbers ("betas"). JSON-able as is.
using HyperValue = std::variant<double, bool, std::vector<double>>;
/// A group's hyper-parameters by PyTorch's names: {"lr": 0.001, "betas": [0.9, 0.999], ...}.
using HyperParams = std::map<std::string, HyperValue>;
/// (β1, β2): the Adam family's decay rates of its two moment averages.
using Betas = std::pair<double, double>;

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

// ---- how a hyper-parameter or a state tensor goes into a state dict and back --------------------

/// A hyper-parameter as param_groups holds it: a number, a flag, or betas as a list of two.
inline HyperValue hyper_value(double v) { return v; }
inline HyperValue hyper_value(bool v) { return v; }
inline HyperValue hyper_value(const Betas& v) { return std::vector<double>{v.first, v.second}; }
/// Reads `key` of `h` into `value`; throws ValueError naming `where` if it is missing or of another
/// kind (a number, a flag, a list of two numbers).
void read_hyper(const HyperParams& h, const std::string& key, const std::string& where,
                double& value);
void read_hyper(const HyperParams& h, const std::string& key, const std::string& where,
                bool& value);
void read_hyper(const HyperParams& h, const std::string& key, const std::string& where,
                Betas& value);
/// Throws ValueError if `h` has a key outside `known`.
void check_hyper_keys(const HyperParams& h, const std::vector<std::string>& known,
                      const std::string& where);

/// Throws ValueError "<pytorch_text>: <value> | <where>: expected <expected>" unless `ok`: every
/// optimizer's checks of its options, PyTorch's text first ("Invalid learning rate: -1.0 | Adam:
/// expected lr >= 0").
void check_hyper(bool ok, const char* pytorch_text, double value, const std::string& where,
                 const char* expected);
/// Throws ValueError with PyTorch's texts unless 0 <= β1 < 1 and 0 <= β2 < 1 (NaN is refused).
void check_betas(const Betas& betas, const std::string& where);

// ---- TAPEGRAD_HYPER: an option that is also a hyper-parameter of param_groups --------------------

/// One line per hyper-parameter of an optimizer's options, written like TAPEGRAD_ARG
/// (core/options.hpp), the default after `=`:
///
///     /// Momentum factor, >= 0; default 0.
///     TAPEGRAD_HYPER(double, momentum) = 0.0;
///
/// declares the option (field, chained setter, getter) and makes it a hyper-parameter that
/// param_groups, state dicts and load_state_dict hold under the key "momentum" (hyper_fields):
/// each is declared once. C++ cannot list a class's fields, so each line also leaves a function
/// keyed by how many lines below lr's it stands: lr comes first, the others fewer than kHyperLines
/// lines below it (both checked when the class compiles).
#define TAPEGRAD_HYPER(T, name)                                                           \
 private:                                                                                 \
  static constexpr int name##_line_ = __LINE__;                                           \
  static_assert(name##_line_ - lr_line_ < ::tapegrad::optim::detail::kHyperLines,         \
                "TAPEGRAD_HYPER(" #T ", " #name ") stands too far below lr's");           \
                                                                                          \
 public:                                                                                  \
  static void hyper_field_(::tapegrad::optim::detail::HyperLine<name##_line_ - lr_line_>, \
                           auto& options, auto&& field) {                                 \
    field(#name, options.name##_);                                                        \
  }                                                                                       \
  TAPEGRAD_ARG(T, name)

namespace detail {
/// A TAPEGRAD_HYPER's place in its class: how many lines below lr's it stands.
template <int Line>
struct HyperLine {};
inline constexpr int kHyperLines = 256;
}  // namespace detail

/// field(key, value) for each TAPEGRAD_HYPER of `options`, in the order its class declares them
/// (`value` is the field itself, const when `options` is).
template <int Line = 0>
void hyper_fields(auto& options, auto&& field) {
  using Options = std::remove_cvref_t<decltype(options)>;
  if constexpr (Line < detail::kHyperLines) {
    if constexpr (requires { Options::hyper_field_(detail::HyperLine<Line>{}, options, field); })
      Options::hyper_field_(detail::HyperLine<Line>{}, options, field);
    hyper_fields<Line + 1>(options, field);
  }
}

// ---- the bookkeeping every optimizer shares ------------------------------------------------------

/// Groups with their options, per-parameter state created at first use, the learning rate that
/// schedulers read and write, and the six state-dict hooks: written once, here. An optimizer is
/// then its options, its state and its step() (adam.hpp, sgd.hpp, sparse_adam.hpp):
///
///   Options  one TAPEGRAD_HYPER per hyper-parameter (lr first), a default constructor, and
///              void check(const std::string& where) const;   the constructor's checks
///   State    one parameter's state: `step` if it counts steps, its tensors, and
///              static void tensor_fields(auto& s, auto&& f);  f(name, field) per tensor
///                                                              (std::optional<Array>: may be absent)
///
///     class Lion : public OptimizerOf<LionOptions, LionState> {
///      public:
///       explicit Lion(std::vector<Parameter> p, LionOptions o = {})
///           : OptimizerOf("Lion", std::move(p), o) {}
///       void step() override;        // the formula, then a loop over each parameter
///     };
///
/// state_dict() holds each group's hyper-parameters under their names (hyper_fields) and each
/// state tensor under its tensor_fields name; load_state_dict() reads them back through the same
/// lists, and checks the options with the same check() as the constructor and set_options().
template <class Options, class State>
class OptimizerOf : public Optimizer {
 public:
  /// A parameter group with its own options (PyTorch's {"params": [...], "lr": ...}).
  struct Group {
    std::vector<Parameter> params;
    Options options;
  };

  const Options& options(std::size_t group) const {
    check_group(group);
    return options_[group];
  }
  /// Replaces a group's hyper-parameters, checked as the constructor checks them (ValueError,
  /// nothing changed, if they are refused).
  void set_options(std::size_t group, Options options) {
    check_group(group);
    options.check(type_name());
    options_[group] = std::move(options);
  }
  double lr(std::size_t group) const override { return options(group).lr(); }
  /// Refuses what the constructor refuses ("Invalid learning rate: -1.0 | Adam: expected lr >= 0").
  void set_lr(std::size_t group, double lr) override {
    set_options(group, Options(options(group)).lr(lr));
  }
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

  // ---- the state-dict hooks, from the options' TAPEGRAD_HYPER lines and State::tensor_fields ----
  HyperParams hyper_params(std::size_t group) const override {
    HyperParams h;
    hyper_fields(options(group),
                 [&](const char* key, const auto& value) { h.emplace(key, hyper_value(value)); });
    return h;
  }
  void check_hyper_params(const HyperParams& h, const std::string& where) const override {
    from_hyper(h, where);
  }
  void set_hyper_params(std::size_t group, const HyperParams& h) override {
    options_[group] = from_hyper(h, type_name());
  }
  StateLayout state_layout() const override {
    StateLayout layout;
    layout.has_step = kCountsSteps;
    State s{};
    State::tensor_fields(s, [&](const char* name, const auto& tensor) {
      (is_optional(tensor) ? layout.optional : layout.required).push_back(name);
    });
    return layout;
  }
  std::optional<ParamState> param_state(std::size_t id) const override {
    if (!state_[id]) return std::nullopt;
    ParamState out;
    if constexpr (kCountsSteps) out.step = state_[id]->step;
    std::size_t n = 0;  // reserved first: a growing vector would copy the moments it moves
    State::tensor_fields(*state_[id], [&](const char*, const auto&) { ++n; });
    out.tensors.reserve(n);
    State::tensor_fields(*state_[id], [&](const char* name, const auto& tensor) {
      if (const Array* a = present(tensor)) out.tensors.emplace_back(name, *a);  // one copy
    });
    return out;
  }
  void set_param_state(std::size_t id, ParamState* s) override {
    if (s == nullptr) {
      state_[id].reset();
      return;
    }
    State loaded{};
    if constexpr (kCountsSteps) loaded.step = *s->step;
    State::tensor_fields(loaded, [&](const char* name, auto& tensor) {
      if (Array* a = s->find(name)) tensor = std::move(*a);  // taken, not copied
    });
    state_[id] = std::move(loaded);
  }

 private:
  static constexpr bool kCountsSteps = requires(State s) { s.step; };
  static bool is_optional(const Array&) { return false; }
  static bool is_optional(const std::optional<Array>&) { return true; }
  static const Array* present(const Array& a) { return &a; }
  static const Array* present(const std::optional<Array>& a) { return a ? &*a : nullptr; }

  // A param_groups entry's options: its keys, then each value, then the constructor's checks.
  static Options from_hyper(const HyperParams& h, const std::string& where) {
    Options o;
    std::vector<std::string> keys;
    hyper_fields(o, [&](const char* key, const auto&) { keys.emplace_back(key); });
    check_hyper_keys(h, keys, where);
    hyper_fields(o, [&](const char* key, auto& value) { read_hyper(h, key, where, value); });
    o.check(where);
    return o;
  }
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

// ---- helpers shared by the optimizers ------------------------------------------------------------

/// A zero-filled array of p's shape: the starting value of a moment or a momentum buffer.
Array zeros_like(const Parameter& p);

/// How messages name a parameter: "'lut.weight'" when it has a name, else "tensor (10, 3)".
std::string param_label(const Parameter& p);

using tapegrad::py_float;  // errors.hpp: hyper-parameters print as Python prints a float

}  // namespace tapegrad::optim
