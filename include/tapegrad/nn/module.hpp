// include/tapegrad/nn/module.hpp
//
// Module: the base of every layer and model, the libtorch way without the holder machinery.
// A module owns PARAMETERS (trained), BUFFERS (saved, never trained) and CHILD modules, each
// registered under a name. Names compose into dotted paths from the root, exactly as PyTorch's:
//
//     model                       path ""             (the root)
//     model.src_embed             path "src_embed"    (a ModuleList)
//     model.src_embed[0].lut      path "src_embed.0.lut", parameter "src_embed.0.lut.weight"
//
// Everything is kept in registration order (vectors, never std::map), so named_parameters(),
// state_dict() and printing list things in the order the constructor registered them. Children
// are held by std::shared_ptr and called with child->forward(x). A parameter shared by two
// modules (a tied weight) is listed once, under its first name. The rules, PyTorch's:
// docs/semantics.md#module-and-state_dict.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapegrad/core/parameter.hpp"
#include "tapegrad/nn/state_dict.hpp"

namespace tapegrad::nn {

class Module {
 public:
  Module() = default;
  virtual ~Module();
  Module(const Module&) = delete;  // a module is an identity: share it by pointer
  Module& operator=(const Module&) = delete;

  // ---- what the module holds (registration order; names relative to this module) ----
  /// ("weight", w), ("lut.weight", ...) ...: pre-order over modules, each module's own parameters
  /// in registration order; a tied parameter appears once, under its first name.
  std::vector<std::pair<std::string, Parameter>> named_parameters(bool recurse = true) const;
  std::vector<Parameter> parameters(bool recurse = true) const;
  /// Buffers, persistent or not, in the same order and with the same de-duplication.
  std::vector<std::pair<std::string, Buffer>> named_buffers(bool recurse = true) const;
  std::vector<Buffer> buffers(bool recurse = true) const;
  /// The direct children, in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// ("", this) first, then every descendant in pre-order with its dotted name; each once.
  std::vector<std::pair<std::string, Module*>> named_modules();
  std::vector<std::pair<std::string, const Module*>> named_modules() const;

  // ---- training mode and gradients ----
  /// Sets training mode on this module and every descendant (Dropout drops only in training).
  Module& train(bool on = true);
  Module& eval() { return train(false); }  ///< train(false)
  bool is_training() const { return training_; }
  /// Turns requires_grad on or off for every parameter (buffers never require grad).
  Module& requires_grad_(bool on = true);
  /// Drops (set_to_none, the default as in PyTorch 2.x) or zero-fills every parameter's gradient.
  void zero_grad(bool set_to_none = true);
  /// Calls fn on every child's subtree first, then on this module (PyTorch's order).
  Module& apply(const std::function<void(Module&)>& fn);

  // ---- saving and loading (src/nn/state_dict.cpp) ----
  /// Copies of every parameter, then every persistent buffer, module by module in pre-order;
  /// keys are dotted paths relative to this module. A tied parameter appears under each of its
  /// keys, and each later key is recorded in the aliases of the state dict.
  StateDict state_dict() const;
  /// Copies `sd` into the parameters and persistent buffers. ATOMIC: everything is validated
  /// first and, on failure, StateDictError is thrown with PyTorch's text and the model is left
  /// unchanged. A size mismatch is always an error; missing and unexpected keys are errors only
  /// when strict (and are returned either way).
  IncompatibleKeys load_state_dict(const StateDict& sd, bool strict = true);
  /// The checks of load_state_dict alone: throws what it would throw, copies nothing. A caller
  /// that loads several things all or nothing (a training checkpoint) checks each first.
  IncompatibleKeys check_state_dict(const StateDict& sd, bool strict = true) const;

  /// Removes the child registered as `name` (libtorch's unregister_module, PyTorch's
  /// `del module.name`); ValueError naming the children when there is none. The removed module
  /// becomes a root (path ""). A member pointing at it still does: reset it too.
  void unregister_module(const std::string& name);

  // ---- names and printing ----
  /// The dotted path from the root ("src_embed.0.lut"); "" for a root.
  const std::string& path() const { return path_; }
  /// The class name PyTorch would print ("Embedding"); by default the C++ class name without
  /// its namespace, so a user's `class TinyLM : public Module` prints as "TinyLM".
  virtual std::string type_name() const;
  /// The text inside the parentheses of a leaf's printed form ("10, 3, padding_idx=0").
  virtual void extra_repr(std::ostream& os) const;
  /// The printed form, in PyTorch's layout: "Name(extra)" for a leaf, and for a parent
  ///     Name(
  ///       (child): Child(...)
  ///     )
  virtual std::string repr() const;
  /// How error messages name this module: "Embedding 'src_embed.0.lut'", or "Embedding" for a root.
  std::string context() const;

 protected:
  /// Registers a parameter under `name` (non-empty, no ".", not yet used by any kind; ValueError
  /// with PyTorch's text otherwise), names it with its full path, and returns the same handle.
  Parameter register_parameter(std::string name, Parameter p);
  /// Registers a buffer. A non-persistent buffer is left out of state_dict() (PyTorch's
  /// persistent=False), e.g. a table that can be recomputed.
  Buffer register_buffer(std::string name, Buffer b, bool persistent = true);
  /// Registers a child module and returns it, typed, so it can initialise a member:
  ///     lut(register_module("lut", std::make_shared<Embedding>(options)))
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>,
                  "register_module: M must derive from tapegrad::nn::Module");
    register_child(std::move(name), module);
    return module;
  }

 private:
  struct BufferSlot {
    std::string name;
    Buffer buffer;
    bool persistent;
  };
  void register_child(std::string name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& kind, const std::string& name) const;
  bool has_name(const std::string& name) const;
  // Recomputes every path and tensor name from the root down (see module.cpp).
  void relabel_from_root();
  // Calls fn(prefix, module) for this module and every descendant in pre-order, WITHOUT
  // de-duplication: the traversal of PyTorch's state_dict() and load_state_dict().
  void visit(const std::string& prefix,
             const std::function<void(const std::string&, const Module&)>& fn) const;
  // load_state_dict's steps; `copy` false only checks.
  IncompatibleKeys load_or_check(const StateDict& sd, bool strict, bool copy) const;

  std::vector<std::pair<std::string, Parameter>> parameters_;
  std::vector<BufferSlot> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::string path_;
  bool training_ = true;
  // The module this one was first registered into (non-owning; cleared by the parent's
  // destructor). Only used to find the root when paths must be recomputed.
  Module* parent_ = nullptr;
};

/// Prints m.repr().
std::ostream& operator<<(std::ostream& os, const Module& m);

using tapegrad::py_float;  // errors.hpp: options print as Python prints a float, "1e-05"

}  // namespace tapegrad::nn
