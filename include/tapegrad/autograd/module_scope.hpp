// include/tapegrad/autograd/module_scope.hpp
//
// Which module's forward is running on this thread, so that tape entries and error messages can
// name it ("Embedding 'embed.lut'"). src/autograd/module_scope.cpp.
#pragma once

#include <string>

namespace tapegrad::autograd {

/// Marks the module whose forward is running (Module::forward implementations open one), so
/// tape entries and error messages can name it. `where` reads like "Embedding 'embed.lut'".
class ModuleScope {
 public:
  ModuleScope(const std::string& type_name, const std::string& path);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;
};
/// The innermost module's path ("" outside any module).
const std::string& current_module_path();
/// "Embedding 'embed.lut'" inside a module's forward, else `op`: the `where` of error messages.
std::string where(const std::string& op);

}  // namespace tapegrad::autograd
