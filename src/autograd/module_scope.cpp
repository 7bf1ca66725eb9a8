// src/autograd/module_scope.cpp: the stack of modules whose forward is running, per thread
// (module_scope.hpp). Tape entries keep the innermost path; error messages name the module.
#include <string>
#include <vector>

#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::autograd {

namespace {
struct ScopeFrame {
  const std::string* type_name;  // interned (names.cpp): an entry may keep the path
  const std::string* path;
};
thread_local std::vector<ScopeFrame> module_stack;
}  // namespace

namespace detail {
const std::string* module_stack_top() {
  return module_stack.empty() ? nullptr : module_stack.back().path;
}
}  // namespace detail

ModuleScope::ModuleScope(const std::string& type_name, const std::string& path) {
  module_stack.push_back({detail::intern_name(type_name), detail::intern_name(path)});
  if (detail::active_profile != nullptr) detail::profile_mark();  // a forward begins
}
ModuleScope::~ModuleScope() { module_stack.pop_back(); }

const std::string& current_module_path() {
  static const std::string none;
  return module_stack.empty() ? none : *module_stack.back().path;
}

std::string where(const std::string& op) {
  if (module_stack.empty()) return op;
  const ScopeFrame& f = module_stack.back();
  return f.path->empty() ? *f.type_name : *f.type_name + " '" + *f.path + "'";
}

}  // namespace tapegrad::autograd
