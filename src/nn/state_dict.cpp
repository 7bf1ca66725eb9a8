// src/nn/state_dict.cpp
//
// StateDict, Module::state_dict() and the ATOMIC Module::load_state_dict()
// (docs/semantics.md#module-and-state_dict), and diff_state_dicts().
//
// Both walks follow PyTorch's: every module in pre-order, including a shared module once per
// place it appears; for each, its parameters then its persistent buffers. load_state_dict first
// decides everything (missing keys, unexpected keys, size mismatches) and only then copies, so a
// refused checkpoint leaves the model exactly as it was. PyTorch copies as it goes and may leave
// a half-loaded model behind when it raises.
#include "tapegrad/nn/state_dict.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

// ---- StateDict ----------------------------------------------------------------------------------

void StateDict::insert(std::string key, Array value) {
  check<ValueError>(!contains(key), "StateDict::insert: expected a new key, got '", key,
                    "', which is already present");
  index_.emplace(key, items_.size());
  items_.emplace_back(std::move(key), std::move(value));
}

void StateDict::add_alias(std::string key, std::string target) {
  check<ValueError>(index_.count(target) == 1,
                    "StateDict::add_alias: expected a target key holding a value, got '", target,
                    "'");
  check<ValueError>(key != target, "StateDict::add_alias: expected two different keys, got '", key,
                    "' twice");
  for (const auto& [k, t] : aliases_)
    check<ValueError>(k != key, "StateDict::add_alias: '", key, "' is already an alias of '", t,
                      "'");
  aliases_.emplace_back(std::move(key), std::move(target));
}

void StateDict::erase(const std::string& key) {
  std::erase_if(aliases_, [&](const auto& a) { return a.first == key || a.second == key; });
  const auto it = index_.find(key);
  if (it == index_.end()) return;
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (std::size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
}

const Array* StateDict::find(const std::string& key) const {
  if (const auto it = index_.find(key); it != index_.end()) return &items_[it->second].second;
  for (const auto& [k, target] : aliases_)
    if (k == key) return &items_[index_.at(target)].second;
  return nullptr;
}

const Array& StateDict::at(const std::string& key) const {
  const Array* a = find(key);
  check<ValueError>(a != nullptr, "StateDict: expected a key of the state dict, got '", key, "' (",
                    size(), " keys)");
  return *a;
}

Array& StateDict::at(const std::string& key) {
  return const_cast<Array&>(std::as_const(*this).at(key));
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : items_) out.push_back(k);
  for (const auto& [k, target] : aliases_)
    if (index_.count(k) == 0) out.push_back(k);
  return out;
}

// ---- IncompatibleKeys -----------------------------------------------------------------------------

namespace {
std::string quoted_list(const std::vector<std::string>& keys, char quote, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < keys.size(); ++i)
    s += (i ? sep : "") + std::string(1, quote) + keys[i] + quote;
  return s;
}
}  // namespace

std::string IncompatibleKeys::to_string() const {
  if (missing_keys.empty() && unexpected_keys.empty()) return "<All keys matched successfully>";
  return "IncompatibleKeys(missing_keys=[" + quoted_list(missing_keys, '\'', ", ") +
         "], unexpected_keys=[" + quoted_list(unexpected_keys, '\'', ", ") + "])";
}

std::ostream& operator<<(std::ostream& os, const IncompatibleKeys& k) {
  return os << k.to_string();
}

// ---- Module::state_dict ---------------------------------------------------------------------------

namespace {
// One entry of a model's state: the key relative to the module state_dict() was called on.
struct LocalState {
  std::string key;
  Tensor tensor;
};
}  // namespace

StateDict Module::state_dict() const {
  StateDict sd;
  std::unordered_map<const void*, std::string> first_key;  // a tied tensor's first key
  auto add = [&](const std::string& key, const Tensor& t) {
    sd.insert(key, t.data());  // a copy: a snapshot, not a view
    const auto [it, fresh] = first_key.emplace(t.impl(), key);
    if (!fresh) sd.add_alias(key, it->second);
  };
  visit("", [&](const std::string& prefix, const Module& m) {
    for (const auto& [n, p] : m.parameters_) add(prefix + n, p);
    for (const auto& b : m.buffers_)
      if (b.persistent) add(prefix + b.name, b.buffer);
  });
  return sd;
}

// ---- Module::load_state_dict ----------------------------------------------------------------------

namespace {
// The hint that ends a refused load: what the shapes mean, or what the keys suggest.
std::string load_hint(const std::vector<std::string>& missing,
                      const std::vector<std::string>& unexpected,
                      const std::vector<std::string>& mismatched) {
  std::ostringstream h;
  if (!mismatched.empty()) {
    h << "in a size mismatch the first shape is the checkpoint's, the second the model's";
    const bool pe = std::any_of(mismatched.begin(), mismatched.end(), [](const std::string& k) {
      return k == "pe" || (k.size() > 3 && k.compare(k.size() - 3, 3, ".pe") == 0);
    });
    if (pe)
      h << "; 'pe' depends on max_len: build the model with the checkpoint's max_len, or make pe "
           "non-persistent (PositionalEncodingOptions::persistent(false))";
    h << "; size mismatches are refused even with strict=false";
    return h.str();
  }
  // A checkpoint saved from a wrapper (or loaded into one) has every key shifted by one prefix.
  if (!missing.empty() && missing.size() == unexpected.size()) {
    auto shifted_by = [](const std::vector<std::string>& longer,
                         const std::vector<std::string>& shorter) {
      const std::size_t dot = longer[0].find('.');
      if (dot == std::string::npos) return std::string();
      const std::string prefix = longer[0].substr(0, dot + 1);
      const std::unordered_set<std::string> keys(longer.begin(), longer.end());
      for (const std::string& k : shorter)
        if (keys.count(prefix + k) == 0) return std::string();
      return prefix;
    };
    if (const std::string p = shifted_by(unexpected, missing); !p.empty())
      return "every checkpoint key carries the extra prefix '" + p +
             "'; erase it from the keys (or load into the module the checkpoint was saved from)";
    if (const std::string p = shifted_by(missing, unexpected); !p.empty())
      return "every model key carries the prefix '" + p +
             "' that the checkpoint's keys lack; load into that child module instead";
  }
  h << "compare the keys with diff_state_dicts(model.state_dict(), sd)";
  if (!missing.empty() || !unexpected.empty())
    h << ", or pass strict=false to load the keys that match";
  return h.str();
}
}  // namespace

IncompatibleKeys Module::load_state_dict(const StateDict& sd, bool strict) {
  return load_or_check(sd, strict, true);
}

IncompatibleKeys Module::check_state_dict(const StateDict& sd, bool strict) const {
  return load_or_check(sd, strict, false);
}

// const: the copy writes through the Tensor handles the walk collected, never through the modules.
IncompatibleKeys Module::load_or_check(const StateDict& sd, bool strict, bool copy) const {
  // 1. The local state, in PyTorch's order; the names each module owns.
  std::vector<LocalState> local;
  std::vector<std::string> unexpected;
  const std::vector<std::string> sd_keys = sd.keys();
  visit("", [&](const std::string& prefix, const Module& m) {
    std::unordered_set<std::string> own, children;
    for (const auto& [n, p] : m.parameters_) {
      local.push_back({prefix + n, p});
      own.insert(n);
    }
    for (const auto& b : m.buffers_)
      if (b.persistent) {
        local.push_back({prefix + b.name, b.buffer});
        own.insert(b.name);
      }
    for (const auto& [n, c] : m.children_) children.insert(n);
    // PyTorch's attribution of unexpected keys: each module judges the keys under its prefix;
    // "x" must be its own parameter or persistent buffer, "x.rest" must go through a child x.
    for (const std::string& key : sd_keys) {
      if (key.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = key.substr(prefix.size());
      const std::size_t dot = rest.find('.');
      const bool known = dot == std::string::npos ? own.count(rest) == 1
                                                  : children.count(rest.substr(0, dot)) == 1;
      if (!known) unexpected.push_back(key);
    }
  });

  // 2. Missing keys and size mismatches, in the model's order.
  std::vector<std::string> missing, mismatched, errors;
  for (const LocalState& s : local) {
    const Array* value = sd.find(s.key);
    if (value == nullptr) {
      missing.push_back(s.key);
    } else if (value->shape() != s.tensor.shape()) {
      mismatched.push_back(s.key);
      errors.push_back("size mismatch for " + s.key + ": copying a param with shape " +
                       str(value->shape()) + " from checkpoint, the shape in current model is " +
                       str(s.tensor.shape()) + ".");
    }
  }

  // 3. Refuse (PyTorch's text, then a hint) before anything has been touched.
  if ((strict && (!missing.empty() || !unexpected.empty())) || !mismatched.empty()) {
    if (strict && !unexpected.empty())
      errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " +
                                        quoted_list(unexpected, '"', ", ") + ". ");
    if (strict && !missing.empty())
      errors.insert(errors.begin(),
                    "Missing key(s) in state_dict: " + quoted_list(missing, '"', ", ") + ". ");
    std::string what = "Error(s) in loading state_dict for " + type_name() + ":";
    for (const std::string& e : errors) what += "\n\t" + e;
    what += "\n\thint: " + load_hint(missing, unexpected, mismatched);
    throw StateDictError(what, missing, unexpected, mismatched);
  }

  if (!copy)
    return IncompatibleKeys{std::move(missing), std::move(unexpected)};  // check_state_dict

  // 4. Copy. Not part of any graph; each write bumps the tensor's version, so a graph that saved
  //    the old values fails loudly at backward instead of using the new ones.
  autograd::NoGradGuard no_grad;
  for (const LocalState& s : local)
    if (const Array* value = sd.find(s.key)) {
      Array& dst = s.tensor.mutable_data();
      std::copy_n(value->data(), value->size(), dst.data());
    }
  return IncompatibleKeys{std::move(missing), std::move(unexpected)};
}

// ---- diff_state_dicts -----------------------------------------------------------------------------

StateDictDiff diff_state_dicts(const StateDict& a, const StateDict& b) {
  StateDictDiff d;
  for (const std::string& key : a.keys()) {
    const Array* y = b.find(key);
    if (y == nullptr) {
      d.missing.push_back(key);
      continue;
    }
    const Array& x = a.at(key);
    if (x.shape() != y->shape()) {
      d.shape_mismatches.push_back({key, x.shape(), y->shape()});
      continue;
    }
    double worst = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float u = x.data()[i], v = y->data()[i];
      if (u == v || (std::isnan(u) && std::isnan(v))) continue;  // equal, or NaN in both places
      const double diff = std::abs(double(u) - double(v));
      if (std::isnan(diff)) {
        worst = diff;
        break;
      }  // NaN on one side only
      worst = std::max(worst, diff);
    }
    d.max_abs_diff.emplace_back(key, worst);
  }
  for (const std::string& key : b.keys())
    if (!a.contains(key)) d.unexpected.push_back(key);
  return d;
}

bool StateDictDiff::identical() const {
  return missing.empty() && unexpected.empty() && shape_mismatches.empty() &&
         std::all_of(max_abs_diff.begin(), max_abs_diff.end(),
                     [](const auto& kv) { return kv.second == 0.0; });
}

std::string StateDictDiff::to_string() const {
  std::ostringstream os;
  os.precision(9);
  for (const auto& k : missing) os << "missing (in a, not in b): \"" << k << "\"\n";
  for (const auto& k : unexpected) os << "unexpected (in b, not in a): \"" << k << "\"\n";
  for (const auto& m : shape_mismatches)
    os << "shape mismatch for \"" << m.key << "\": " << str(m.a) << " vs " << str(m.b) << '\n';
  std::size_t width = 0;
  for (const auto& [k, v] : max_abs_diff) width = std::max(width, k.size());
  if (!max_abs_diff.empty()) os << "max |a - b| per key:\n";
  for (const auto& [k, v] : max_abs_diff)
    os << "  " << k << std::string(width - k.size() + 2, ' ') << v << '\n';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const StateDictDiff& d) { return os << d.to_string(); }

}  // namespace tapegrad::nn
