// src/io/optimizer_state.cpp: an optimizer's state and its scheduler's in a safetensors file.
//
// Tensors "state.{id}.step" (I64, shape ()), "state.{id}.exp_avg", "state.{id}.exp_avg_sq",
// ["state.{id}.max_exp_avg_sq"], "state.{id}.momentum_buffer" (F32), all under a prefix; in
// "__metadata__", "optimizer" (the type name), "param_groups" and "lr_scheduler" as JSON text:
//     "param_groups": [{"betas":[0.9,0.98],"eps":1e-09,"lr":0.001,...,"params":[0,1]}]
//     "lr_scheduler": {"base_lrs":[1.0],"last_epoch":40}
// Numbers are written with the shortest text that reads back as the same double, so a resumed
// run uses exactly the saved rates; NaN and infinities (which JSON lacks) are the strings "NaN",
// "Infinity", "-Infinity". The readers take hostile text: anything but this layout is a
// CheckpointError (kind "InvalidCheckpoint") whose message starts with `where`.
#include "optimizer_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "checkpoint_errors.hpp"
#include "checkpoint_names.hpp"
#include "float_values.hpp"
#include "json_util.hpp"
#include "tapegrad/io/checkpoint.hpp"

namespace tapegrad::io {

// ---- the JSON texts of param_groups and lr_scheduler ---------------------------------------------

namespace {
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// JSON has no NaN or infinities; nlohmann would write them as null, which reads back as nothing.
ordered_json number_to_json(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  return x;  // shortest text that reads back as x
}

std::optional<double> number_from_json(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

// Parses `text`, refusing nesting deeper than `max_depth` containers.
json parse_bounded(std::string_view text, int max_depth, const std::string& where,
                   const char* what) {
  const json::parser_callback_t bound = [max_depth](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth)
      throw TooDeep{};
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), bound);
  } catch (const TooDeep&) {
    invalid_checkpoint(where, "expected ", what, " nested at most ", max_depth,
                       " deep, got deeper nesting");
  } catch (const json::exception& e) {
    invalid_checkpoint(where, "expected ", what, " as JSON text, got text that is not JSON (",
                       reason(e), ")");
  }
}

std::string param_groups_to_json(const std::vector<optim::ParamGroupState>& groups) {
  ordered_json out = ordered_json::array();
  for (const optim::ParamGroupState& g : groups) {
    ordered_json entry = ordered_json::object();
    for (const auto& [key, value] : g.options) {
      if (const auto* x = std::get_if<double>(&value)) {
        entry[key] = number_to_json(*x);
      } else if (const auto* flag = std::get_if<bool>(&value)) {
        entry[key] = *flag;
      } else {
        ordered_json list = ordered_json::array();
        for (double item : std::get<std::vector<double>>(value))
          list.push_back(number_to_json(item));
        entry[key] = std::move(list);
      }
    }
    entry["params"] = ordered_json::array();
    for (std::size_t id : g.params) entry["params"].push_back(static_cast<std::uint64_t>(id));
    out.push_back(std::move(entry));
  }
  return out.dump();
}

std::vector<optim::ParamGroupState> param_groups_from_json(std::string_view text,
                                                           const std::string& where) {
  // [ {key: number | bool | [numbers], ..., "params": [ids]} ]: a list, objects, lists inside.
  const json root = parse_bounded(text, 3, where, "param_groups");
  if (!root.is_array())
    invalid_checkpoint(where, "expected param_groups to be a JSON list of groups, got a ",
                       root.type_name());
  std::vector<optim::ParamGroupState> groups;
  for (std::size_t g = 0; g < root.size(); ++g) {
    const json& entry = root[g];
    if (!entry.is_object())
      invalid_checkpoint(where, "expected param_groups[", g, "] to be a JSON object, got a ",
                         entry.type_name());
    optim::ParamGroupState group;
    bool has_params = false;
    for (const auto& [key, value] : entry.items()) {
      if (key == "params") {
        if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const json& id) {
              return id.is_number_unsigned();
            }))
          invalid_checkpoint(where, "expected param_groups[", g,
                             "].params to be a list of parameter ids (integers >= 0), got ",
                             excerpt(value));
        for (const json& id : value) group.params.push_back(id.get<std::uint64_t>());
        has_params = true;
      } else if (value.is_boolean()) {
        group.options[key] = value.get<bool>();
      } else if (const auto x = number_from_json(value)) {
        group.options[key] = *x;
      } else if (value.is_array()) {
        std::vector<double> list;
        for (const json& item : value) {
          const auto y = number_from_json(item);
          if (!y)
            invalid_checkpoint(where, "expected param_groups[", g, "].", key,
                               " to be a list of numbers, got ", excerpt(value));
          list.push_back(*y);
        }
        group.options[key] = std::move(list);
      } else {
        invalid_checkpoint(where, "expected param_groups[", g, "].", key,
                           " to be a number, true/false or a list of numbers, got ",
                           excerpt(value));
      }
    }
    if (!has_params)
      invalid_checkpoint(where, "expected param_groups[", g, "] to have \"params\", got none");
    groups.push_back(std::move(group));
  }
  return groups;
}

std::string lambda_lr_to_json(const optim::LambdaLRState& state) {
  ordered_json out = ordered_json::object();
  out["base_lrs"] = ordered_json::array();
  for (double x : state.base_lrs) out["base_lrs"].push_back(number_to_json(x));
  out["last_epoch"] = state.last_epoch;
  return out.dump();
}

optim::LambdaLRState lambda_lr_from_json(std::string_view text, const std::string& where) {
  // {"base_lrs": [numbers], "last_epoch": integer}; other keys (PyTorch's "_step_count",
  // "_last_lr", ...) are not state tapegrad needs, and are ignored.
  const json root = parse_bounded(text, 3, where, "lr_scheduler");
  if (!root.is_object())
    invalid_checkpoint(where, "expected lr_scheduler to be a JSON object, got a ",
                       root.type_name());
  const auto epoch = root.find("last_epoch"), base = root.find("base_lrs");
  if (epoch == root.end() || !epoch->is_number_integer() ||
      (epoch->is_number_unsigned() && epoch->get<std::uint64_t>() > std::uint64_t(INT64_MAX)))
    invalid_checkpoint(where, "expected lr_scheduler.last_epoch to be a 64-bit integer, got ",
                       epoch == root.end() ? std::string("none") : excerpt(*epoch));
  if (base == root.end() || !base->is_array())
    invalid_checkpoint(where, "expected lr_scheduler.base_lrs to be a list of numbers, got ",
                       base == root.end() ? std::string("none") : excerpt(*base));
  optim::LambdaLRState state;
  state.last_epoch = epoch->get<std::int64_t>();
  for (const json& item : *base) {
    const auto x = number_from_json(item);
    if (!x)
      invalid_checkpoint(where, "expected lr_scheduler.base_lrs to be a list of numbers, got ",
                         excerpt(*base));
    state.base_lrs.push_back(*x);
  }
  return state;
}
// ---- the values no run can produce ---------------------------------------------------------------

// A step count: I64 of shape (), or (PyTorch's layout) an F32/F64 of shape () holding a whole
// number; never negative, since it counts the steps taken.
std::int64_t step_count(const SafetensorsFile& file, const TensorRecord& r,
                        const std::string& where) {
  const auto refuse = [&](const auto& got) {
    invalid_checkpoint(where, "expected ", in_quotes(r.name),
                       " to be a step count (a whole number >= 0), got ", got);
  };
  if (r.dtype == Dtype::I64 && r.shape.empty()) {
    const std::int64_t step = file.to_int64(r.name)();
    if (step < 0) refuse(step);
    return step;
  }
  if ((r.dtype == Dtype::F32 || r.dtype == Dtype::F64) && r.shape.empty()) {
    double x;
    if (r.dtype == Dtype::F64)
      std::memcpy(&x, r.bytes().data(), 8);
    else
      x = double(file.to_float(r.name)());
    if (!(std::isfinite(x) && std::trunc(x) == x && x >= 0 && x < 0x1p63)) refuse(x);
    return static_cast<std::int64_t>(x);
  }
  invalid_checkpoint(where, "expected ", in_quotes(r.name),
                     " to be a step count (I64, shape ()), got ", dtype_name(r.dtype), " of shape ",
                     r.shape);
}

// A running mean of squared gradients (Adam's v, AMSGrad's max of it): finite and >= 0. Any other
// state tensor (Adam's first moment exp_avg, SGD's momentum_buffer, a running mean of gradients):
// finite. A file holding anything else was damaged, made by hand or saved by a run that had
// diverged; loading it would feed a negative number to sqrt, or NaN to every weight, at the next
// step, and the run would then overwrite its checkpoints with NaN.
void check_moment(const std::string& name, const std::string& what, const Array& v,
                  const std::string& where) {
  const bool second = what == "exp_avg_sq" || what == "max_exp_avg_sq";
  const float* p = v.data();
  for (std::size_t i = 0, n = v.size(); i < n; ++i)
    if (!(std::isfinite(p[i]) && (!second || p[i] >= 0.0f)))
      invalid_checkpoint(where, "expected ", in_quotes(name),
                         second ? " to hold a second moment (finite values >= 0), got "
                                : " to hold a moment (finite values), got ",
                         p[i], " at position ", position_str(i, v.shape()));
}
}  // namespace

// ---- the state in the file -------------------------------------------------------------------------

optim::OptimizerState optimizer_state_from(const SafetensorsFile& file, SafetensorsFile* owned,
                                           const std::string& prefix, const std::string& where) {
  optim::OptimizerState out;
  const FloatValues values(file, owned);
  const auto type = file.metadata_value(prefix + "optimizer");
  if (!type)
    invalid_checkpoint(where, "expected __metadata__ ", in_quotes(prefix + "optimizer"),
                       " naming the optimizer's type, got none; is this an optimizer checkpoint "
                       "(io::save_optimizer)?");
  out.optimizer = *type;
  const auto groups = file.metadata_value(prefix + "param_groups");
  if (!groups)
    invalid_checkpoint(where, "expected __metadata__ ", in_quotes(prefix + "param_groups"),
                       ", got none");
  out.param_groups = param_groups_from_json(*groups, where);

  // Tensors "state.{id}.{name}": the step count (I64, shape ()) and the state tensors.
  const std::string state_prefix = prefix + "state.";
  for (const std::string& name : names_under(file, prefix)) {
    if (!name.starts_with(state_prefix))
      invalid_checkpoint(where, "expected only tensors named ",
                         in_quotes(state_prefix + "{id}.{name}"), " in an optimizer's state, got ",
                         in_quotes(name));
    const std::string rest = name.substr(state_prefix.size());
    const std::size_t dot = rest.find('.');
    const auto id = parse_integer<std::size_t>(std::string_view(rest).substr(0, dot));
    if (dot == std::string::npos || !id || dot + 1 == rest.size())
      invalid_checkpoint(where, "expected an optimizer state tensor named ",
                         in_quotes(state_prefix + "{id}.{name}"), " with a decimal id, got ",
                         in_quotes(name));
    const std::string what = rest.substr(dot + 1);
    const TensorRecord& r = file.record(name);
    optim::ParamState& s = out.state[*id];
    if (what == "step") {
      s.step = step_count(file, r, where);
    } else {
      if (!is_float(r.dtype))
        fail<TypeError>(where, ": expected optimizer state ", in_quotes(name),
                        " to hold floating-point data (F32, F64, F16 or BF16), got dtype ",
                        dtype_name(r.dtype));
      Array value = values(name);
      check_moment(name, what, value, where);
      s.tensors.emplace_back(what, std::move(value));
    }
  }
  return out;
}

std::optional<optim::LambdaLRState> lambda_lr_state_from(const SafetensorsFile& file,
                                                         const std::string& prefix,
                                                         const std::string& where) {
  const auto text = file.metadata_value(prefix + "lr_scheduler");
  if (!text) return std::nullopt;
  return lambda_lr_from_json(*text, where);
}

void add_optimizer_state(SafetensorsFile& file, optim::OptimizerState state,
                         const optim::LambdaLRState* scheduler, const std::string& prefix) {
  for (auto& [id, s] : state.state) {
    const std::string base = prefix + "state." + std::to_string(id) + ".";
    if (s.step) file.add(base + "step", IndexArray(*s.step));  // rank 0, as PyTorch's
    for (auto& [name, value] : s.tensors) file.add(base + name, std::move(value));
  }
  file.set_metadata(prefix + "optimizer", state.optimizer);
  file.set_metadata(prefix + "param_groups", param_groups_to_json(state.param_groups));
  if (scheduler != nullptr)
    file.set_metadata(prefix + "lr_scheduler", lambda_lr_to_json(*scheduler));
}

optim::OptimizerState read_optimizer_state(const SafetensorsFile& file, const std::string& prefix,
                                           const std::string& source) {
  return optimizer_state_from(file, nullptr, prefix, where_in("read_optimizer_state", source));
}

std::optional<optim::LambdaLRState> read_lambda_lr_state(const SafetensorsFile& file,
                                                         const std::string& prefix,
                                                         const std::string& source) {
  return lambda_lr_state_from(file, prefix, where_in("read_lambda_lr_state", source));
}

}  // namespace tapegrad::io
