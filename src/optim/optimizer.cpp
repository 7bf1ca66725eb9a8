// src/optim/optimizer.cpp
//
// The optimizer base: checking the parameter groups, zero_grad, and the state-dict machinery shared
// by every optimizer (docs/semantics.md#optimizers). load_state_dict validates everything first and
// only then changes the optimizer, so a refused load leaves it exactly as it was.
#include "tapegrad/optim/optimizer.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace tapegrad::optim {

const Array* ParamState::find(const std::string& name) const {
  for (const auto& [key, value] : tensors)
    if (key == name) return &value;
  return nullptr;
}
Array* ParamState::find(const std::string& name) {
  return const_cast<Array*>(static_cast<const ParamState&>(*this).find(name));
}

// ---- construction --------------------------------------------------------------------------------

std::vector<Parameter> Optimizer::non_empty(std::vector<Parameter> params) {
  check<ValueError>(!params.empty(), "optimizer got an empty parameter list");
  return params;
}

Optimizer::Optimizer(std::string type_name, std::vector<std::vector<Parameter>> groups)
    : type_name_(std::move(type_name)), groups_(std::move(groups)) {
  check<ValueError>(!groups_.empty(), "optimizer got an empty parameter list");
  // In PyTorch's order: each group is checked on its own, then against the groups before it.
  std::unordered_map<const TensorImpl*, std::size_t> group_of;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    std::set<const TensorImpl*> seen;
    for (std::size_t k = 0; k < groups_[g].size(); ++k) {
      const Parameter& p = groups_[g][k];
      check<TypeError>(
          p.defined(), "optimizer can only optimize Tensors, but one of the params is NoneType | ",
          type_name_, ": group ", g, " holds an empty Parameter handle at position ", k);
      if (!seen.insert(p.impl()).second)
        fail<ValueError>("optimizer contains a parameter group with duplicate parameters | ",
                         type_name_, ": ", param_label(p), " appears twice in group ", g);
    }
    for (const Parameter& p : groups_[g]) {
      const auto [it, inserted] = group_of.emplace(p.impl(), g);
      if (!inserted)
        fail<ValueError>("some parameters appear in more than one parameter group | ", type_name_,
                         ": ", param_label(p), " is in groups ", it->second, " and ", g);
    }
    num_params_ += groups_[g].size();
  }
}

void Optimizer::check_group(std::size_t group) const {
  check<IndexError>(group < groups_.size(), type_name_, ": expected a group index in [0, ",
                    groups_.size(), "), got ", group);
}

const std::vector<Parameter>& Optimizer::params(std::size_t group) const {
  check_group(group);
  return groups_[group];
}

const Parameter& Optimizer::param(std::size_t id) const {
  for (const std::vector<Parameter>& group : groups_) {
    if (id < group.size()) return group[id];
    id -= group.size();
  }
  fail<IndexError>(type_name_, ": expected a parameter id in [0, ", num_params_, "), got ",
                   id + num_params_);
}

std::size_t Optimizer::param_id(const Parameter& p) const {
  std::size_t id = 0;
  for (const std::vector<Parameter>& group : groups_)
    for (const Parameter& q : group) {
      if (q.is_same(p)) return id;
      ++id;
    }
  fail<ValueError>(type_name_, ": ", p.describe(), " is not one of this optimizer's parameters");
}

void Optimizer::check_sparse_rows(const Parameter& p, const std::string& where) {
  const RowSparseGrad& sg = p.sparse_grad();
  const auto rows = static_cast<std::int64_t>(p.shape()[0]);
  for (std::size_t k = 0; k < sg.indices.size(); ++k) {
    const std::int64_t id = sg.indices.data()[k];
    if (id < 0 || id >= rows)
      fail<IndexError>(where, ": expected the row ids of the row-sparse gradient of ", p.describe(),
                       " in [0, ", rows, "), got ", id, " at position ", k);
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const std::vector<Parameter>& group : groups_)
    for (const Parameter& p : group) p.zero_grad(set_to_none);
}

// ---- state dict ----------------------------------------------------------------------------------

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  out.optimizer = type_name_;
  std::size_t id = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    ParamGroupState group{hyper_params(g), {}};
    for (std::size_t k = 0; k < groups_[g].size(); ++k, ++id) {
      group.params.push_back(id);
      if (std::optional<ParamState> s = param_state(id)) out.state.emplace(id, std::move(*s));
    }
    out.param_groups.push_back(std::move(group));
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  load_state_dict(OptimizerState(state));
}

void Optimizer::check_state_dict(const OptimizerState& state) const { checked_state_ids(state); }

void Optimizer::load_state_dict(OptimizerState&& loaded) {
  const std::vector<std::optional<std::size_t>> ids = checked_state_ids(loaded);
  // Everything is checked: nothing below throws.
  for (std::size_t g = 0; g < groups_.size(); ++g)
    set_hyper_params(g, loaded.param_groups[g].options);
  for (std::size_t i = 0; i < num_params_; ++i)
    set_param_state(i, ids[i] ? &loaded.state.at(*ids[i]) : nullptr);
}

std::vector<std::optional<std::size_t>> Optimizer::checked_state_ids(
    const OptimizerState& loaded) const {
  const std::string where = type_name_ + ".load_state_dict";
  check<ValueError>(loaded.optimizer == type_name_, where,
                    ": expected the state dict of an optimizer of type '", type_name_, "', got '",
                    loaded.optimizer, "'");
  check<ValueError>(loaded.param_groups.size() == groups_.size(),
                    "loaded state dict has a different number of parameter groups | ", where,
                    ": expected ", groups_.size(), " groups, got ", loaded.param_groups.size());
  for (std::size_t g = 0; g < groups_.size(); ++g)
    check<ValueError>(loaded.param_groups[g].params.size() == groups_[g].size(),
                      "loaded state dict contains a parameter group that doesn't match the size of "
                      "optimizer's group | ",
                      where, ": expected ", groups_[g].size(), " parameters in group ", g, ", got ",
                      loaded.param_groups[g].params.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    std::ostringstream group_where;
    group_where << where << ": param_groups[" << g << "]";
    check_hyper_params(loaded.param_groups[g].options, group_where.str());
  }

  // As PyTorch: the loaded ids map, in order, onto this optimizer's parameters.
  std::unordered_map<std::size_t, std::size_t> id_map;
  std::size_t id = 0;
  for (const ParamGroupState& group : loaded.param_groups)
    for (std::size_t saved : group.params) {
      check<ValueError>(id_map.emplace(saved, id).second, where,
                        ": expected distinct parameter ids in param_groups, got ", saved, " twice");
      ++id;
    }

  const StateLayout layout = state_layout();
  std::vector<std::optional<std::size_t>> incoming(num_params_);
  for (const auto& [saved, s] : loaded.state) {
    const auto it = id_map.find(saved);
    check<ValueError>(it != id_map.end(), where, ": the state has an entry for param ", saved,
                      ", which is in no parameter group");
    const std::size_t i = it->second;
    const Parameter& p = param(i);
    const std::string who =
        "param " + std::to_string(i) + (p.name().empty() ? "" : " ('" + p.name() + "')");
    if (layout.has_step) {
      check<ValueError>(s.step.has_value(), where, ": expected a step count in the state of ", who,
                        ", got none");
      check<ValueError>(*s.step >= 0, where, ": expected a step count >= 0 for ", who, ", got ",
                        *s.step);
    } else {
      check<ValueError>(!s.step.has_value(), where, ": expected no step count in the state of ",
                        who, " (", type_name_, " keeps none), got ", *s.step);
    }
    std::set<std::string> names;
    for (const auto& [name, value] : s.tensors) {
      const bool known = std::count(layout.required.begin(), layout.required.end(), name) +
                             std::count(layout.optional.begin(), layout.optional.end(), name) >
                         0;
      check<ValueError>(known, where, ": unexpected state '", name, "' for ", who, "; ", type_name_,
                        " keeps only the state its layout names");
      check<ValueError>(names.insert(name).second, where, ": state '", name, "' appears twice for ",
                        who);
      check<ValueError>(value.shape() == p.shape(), "optimizer state for ", who, " has shape ",
                        value.shape(), ", parameter has ", p.shape(), " | ", where, ": in state '",
                        name, "'");
    }
    for (const std::string& name : layout.required)
      check<ValueError>(names.count(name) == 1, where, ": expected state '", name, "' for ", who,
                        ", got none");
    incoming[i] = saved;
  }
  return incoming;
}

// ---- hyper-parameter helpers ---------------------------------------------------------------------

namespace {
// h[key] as a T. ValueError naming `where` if h has no `key`, or if its value is not a T or not
// well_formed: "expected '<key>' to be <expected>".
template <class T>
const T& hyper_as(const HyperParams& h, const std::string& key, const std::string& where,
                  const char* expected, bool (*well_formed)(const T&) = nullptr) {
  const auto it = h.find(key);
  check<ValueError>(it != h.end(), where, ": expected a hyper-parameter '", key, "', got none");
  const T* value = std::get_if<T>(&it->second);
  check<ValueError>(value != nullptr && (!well_formed || well_formed(*value)), where,
                    ": expected '", key, "' to be ", expected);
  return *value;
}
}  // namespace

void read_hyper(const HyperParams& h, const std::string& key, const std::string& where,
                double& value) {
  value = hyper_as<double>(h, key, where, "a number");
}

void read_hyper(const HyperParams& h, const std::string& key, const std::string& where,
                bool& value) {
  value = hyper_as<bool>(h, key, where, "true or false");
}

void read_hyper(const HyperParams& h, const std::string& key, const std::string& where,
                Betas& value) {
  const auto& list =
      hyper_as<std::vector<double>>(h, key, where, "a list of two numbers",
                                    [](const std::vector<double>& l) { return l.size() == 2; });
  value = {list[0], list[1]};
}

void check_hyper_keys(const HyperParams& h, const std::vector<std::string>& known,
                      const std::string& where) {
  for (const auto& [key, value] : h)
    check<ValueError>(std::find(known.begin(), known.end(), key) != known.end(), where,
                      ": unexpected hyper-parameter '", key, "'");
}

std::string param_label(const Parameter& p) {
  return p.name().empty() ? p.describe() : "'" + p.name() + "'";
}

Array zeros_like(const Parameter& p) {
  Array a = Array::from_shape(p.shape());
  std::fill(a.begin(), a.end(), 0.0f);
  return a;
}

void check_hyper(bool ok, const char* pytorch_text, double value, const std::string& where,
                 const char* expected) {
  if (!ok)
    fail<ValueError>(pytorch_text, ": ", py_float(value), " | ", where, ": expected ", expected);
}

void check_betas(const Betas& betas, const std::string& where) {
  check_hyper(0.0 <= betas.first && betas.first < 1.0, "Invalid beta parameter at index 0",
              betas.first, where, "0 <= beta1 < 1");
  check_hyper(0.0 <= betas.second && betas.second < 1.0, "Invalid beta parameter at index 1",
              betas.second, where, "0 <= beta2 < 1");
}

}  // namespace tapegrad::optim
