// include/tapegrad/nn/state_dict.hpp
//
// StateDict: what Module::state_dict() returns and load_state_dict() reads — an insertion-ordered
// map from dotted keys ("src_embed.0.lut.weight") to arrays. The arrays are COPIES (PyTorch's
// share storage with the live parameters): a saved state dict never changes under later training.
// A tied parameter appears under each of its keys; `aliases()` records each later key -> the
// first key, so a checkpoint writer can store the tensor once. Lookups follow an alias whose key
// holds no value of its own. Also here: IncompatibleKeys (what a load reports) and
// diff_state_dicts(), which says how two state dicts differ, key by key.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::nn {

class StateDict {
 public:
  using Item = std::pair<std::string, Array>;

  /// Appends key -> value. A key already present (as a key or an alias) is a ValueError.
  void insert(std::string key, Array value);
  /// Records that `key` is the same tensor as `target` (an earlier key holding a value).
  void add_alias(std::string key, std::string target);
  /// Removes a key (and any alias of it, or that it is).
  void erase(const std::string& key);

  /// Whether `key` has a value, directly or through an alias.
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  /// The value of `key` (following an alias), or nullptr.
  const Array* find(const std::string& key) const;
  /// The value of `key`; an absent key is a ValueError naming it.
  const Array& at(const std::string& key) const;
  Array& at(const std::string& key);

  /// Every key, in insertion order, then the keys that exist only as aliases.
  std::vector<std::string> keys() const;
  /// The (key, value) pairs in insertion order.
  /// The (key, value) pairs in order. On a temporary (`model.state_dict().items()`, as in a
  /// range-for) they are returned by value, so nothing refers into a state dict that is gone.
  const std::vector<Item>& items() const& { return items_; }
  std::vector<Item> items() && { return std::move(items_); }
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  /// (later key, first key) for each tied tensor, in the order they were found.
  const std::vector<std::pair<std::string, std::string>>& aliases() const& { return aliases_; }
  std::vector<std::pair<std::string, std::string>> aliases() && { return std::move(aliases_); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, std::size_t> index_;  // key -> position in items_
  std::vector<std::pair<std::string, std::string>> aliases_;
};

/// What load_state_dict(sd, strict) reports: local keys absent from sd, and keys of sd that
/// name nothing in the model (a non-persistent buffer's key included).
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  /// "<All keys matched successfully>", or
  /// "IncompatibleKeys(missing_keys=['a'], unexpected_keys=[])" as PyTorch prints it.
  std::string to_string() const;
};
std::ostream& operator<<(std::ostream& os, const IncompatibleKeys& k);

/// How state dict `b` (e.g. a checkpoint) differs from `a` (e.g. the model's own state dict).
struct StateDictDiff {
  struct ShapeMismatch {
    std::string key;
    Shape a, b;
  };
  std::vector<std::string> missing;             ///< keys of a absent from b, in a's order
  std::vector<std::string> unexpected;          ///< keys of b absent from a, in b's order
  std::vector<ShapeMismatch> shape_mismatches;  ///< common keys whose shapes differ
  /// max |a - b| over the elements of each common key of equal shapes, in a's order (0 for an
  /// empty tensor; NaN when exactly one side holds a NaN at some element).
  std::vector<std::pair<std::string, double>> max_abs_diff;

  /// Same keys, same shapes, and every difference 0.
  bool identical() const;
  /// One line per finding, then the max-abs difference of each common key.
  std::string to_string() const;
};
std::ostream& operator<<(std::ostream& os, const StateDictDiff& d);

/// Compares two state dicts key by key: what load_state_dict(b) into a model whose
/// state dict is `a` would report, and how far apart the common values are.
StateDictDiff diff_state_dicts(const StateDict& a, const StateDict& b);

}  // namespace tapegrad::nn
