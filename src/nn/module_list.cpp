// src/nn/module_list.cpp: ModuleList registration, checked indexing and its compressed repr.
#include "tapegrad/nn/module_list.hpp"

#include <cstdlib>
#include <cxxabi.h>

#include "add_indent.hpp"

namespace tapegrad::nn {

ModuleList::ModuleList(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) append(std::move(m));
}

void ModuleList::append(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

std::size_t ModuleList::checked_index(std::int64_t i) const {
  const auto n = static_cast<std::int64_t>(modules_.size());
  if (i < -n || i >= n)
    fail<IndexError>("index ", i, " is out of range | ", context(), ": expected an index in [", -n,
                     ", ", n, "), got ", i);
  return static_cast<std::size_t>(i < 0 ? i + n : i);
}

std::shared_ptr<Module> ModuleList::ptr(std::int64_t i) const { return modules_[checked_index(i)]; }

void ModuleList::throw_wrong_type(std::int64_t i, const char* mangled) const {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  const std::string wanted = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  fail<TypeError>(context(), "::ptr: expected module ", i, " to be a ", wanted, ", got a ",
                  ptr(i)->type_name());
}

std::string ModuleList::repr() const {
  if (modules_.empty()) return type_name() + "()";
  // Runs of identical printed forms become one line "(first-last): n x repr".
  std::string s = type_name() + "(";
  std::size_t start = 0;
  std::string block = modules_[0]->repr();
  auto flush = [&](std::size_t end) {
    std::string line = start == end ? "(" + std::to_string(start) + "): " + block
                                    : "(" + std::to_string(start) + "-" + std::to_string(end) +
                                          "): " + std::to_string(end - start + 1) + " x " + block;
    s += "\n  " + detail::add_indent(line, 2);
  };
  for (std::size_t i = 1; i < modules_.size(); ++i) {
    std::string r = modules_[i]->repr();
    if (r == block) continue;
    flush(i - 1);
    start = i;
    block = std::move(r);
  }
  flush(modules_.size() - 1);
  return s + "\n)";
}

}  // namespace tapegrad::nn
