// include/tapegrad/nn/module_list.hpp
//
// ModuleList: a list of child modules registered as "0", "1", ... so their parameters are named
// "layers.0.weight", "layers.1.weight", as in PyTorch. It has no forward: the owner loops over it.
//
//     layers = register_module("layers", std::make_shared<ModuleList>());
//     layers->push_back(std::make_shared<Linear>(16, 16));
//     for (const auto& layer : *layers) ...            // std::shared_ptr<Module>
//     auto first = layers->ptr<Linear>(0);             // typed access, checked
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

class ModuleList : public Module {
 public:
  ModuleList() = default;
  /// Registers each module in order, as "0", "1", ...
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules);

  /// Registers `module` under the next index and returns it, with its own type.
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>,
                  "ModuleList::push_back: M must derive from tapegrad::nn::Module");
    append(module);
    return module;
  }
  std::size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }

  /// The module at index i (negative counts from the end, as in Python); IndexError outside.
  Module& operator[](std::int64_t i) const { return *ptr(i); }
  std::shared_ptr<Module> ptr(std::int64_t i) const;
  /// The module at index i as an M; TypeError when it is something else.
  template <class M>
  std::shared_ptr<M> ptr(std::int64_t i) const {
    std::shared_ptr<M> typed = std::dynamic_pointer_cast<M>(ptr(i));
    if (!typed) throw_wrong_type(i, typeid(M).name());
    return typed;
  }

  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }

  std::string type_name() const override { return "ModuleList"; }
  /// PyTorch 2.x's ModuleList repr: consecutive identical children are printed once,
  /// "(0-5): 6 x Linear(in_features=16, out_features=16, bias=True)".
  std::string repr() const override;

 private:
  void append(std::shared_ptr<Module> module);
  std::size_t checked_index(std::int64_t i) const;
  [[noreturn]] void throw_wrong_type(std::int64_t i, const char* mangled) const;

  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace tapegrad::nn
