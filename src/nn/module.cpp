// src/nn/module.cpp
//
// Module: registration with PyTorch's name checks, the named_* walks, train/eval, apply, and
// printing in PyTorch's layout. state_dict() and load_state_dict() live in state_dict.cpp.
//
// Paths are relative to the ROOT, but a module is built bottom-up: an Embedding registers its
// weight (named "weight") before the Embeddings that owns it is registered as "src_embed.0" in a
// model. So every registration recomputes the paths of the whole tree from its root, in
// pre-order, each tensor named after its first occurrence (which is how a tied parameter keeps
// its first name). Models are small trees and registration happens once, at construction.
#include "tapegrad/nn/module.hpp"

#include <algorithm>
#include <cstdlib>
#include <cxxabi.h>
#include <memory>
#include <ostream>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "add_indent.hpp"

namespace tapegrad::nn {

namespace {
std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (true) {
    const std::size_t nl = s.find('\n', start);
    lines.push_back(s.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}
}  // namespace

Module::~Module() {
  for (auto& [name, child] : children_)
    if (child->parent_ == this) child->parent_ = nullptr;
}

// ---- registration --------------------------------------------------------------------------------

bool Module::has_name(const std::string& name) const {
  for (const auto& [n, p] : parameters_)
    if (n == name) return true;
  for (const auto& b : buffers_)
    if (b.name == name) return true;
  for (const auto& [n, c] : children_)
    if (n == name) return true;
  return false;
}

void Module::check_new_name(const std::string& kind, const std::string& name) const {
  const std::string where = context() + ".register_" + kind;
  check<ValueError>(!name.empty(), kind, " name can't be empty string \"\" | ", where,
                    ": expected a non-empty name");
  if (kind == "module")
    check<ValueError>(name.find('.') == std::string::npos,
                      "module name can't contain \".\", got: ", name, " | ", where,
                      ": expected a name without \".\"; nest modules to build dotted paths");
  else
    check<ValueError>(name.find('.') == std::string::npos, kind, " name can't contain \".\" | ",
                      where, ": expected a name without \".\", got \"", name, "\"");
  check<ValueError>(!has_name(name), "attribute '", name, "' already exists | ", where,
                    ": expected a new name, got '", name,
                    "', which is already registered; a registration cannot be replaced");
}

Parameter Module::register_parameter(std::string name, Parameter p) {
  check_new_name("parameter", name);
  if (!p.defined())
    fail<ValueError>(context(), ".register_parameter: expected a defined Parameter for '", name,
                     "', got an empty handle; leave an absent parameter unregistered (as Linear "
                     "does with bias=false)");
  parameters_.emplace_back(std::move(name), p);
  relabel_from_root();
  return p;
}

Buffer Module::register_buffer(std::string name, Buffer b, bool persistent) {
  check_new_name("buffer", name);
  if (!b.defined())
    fail<ValueError>(context(), ".register_buffer: expected a defined Buffer for '", name,
                     "', got an empty handle");
  buffers_.push_back(BufferSlot{std::move(name), b, persistent});
  relabel_from_root();
  return b;
}

void Module::register_child(std::string name, std::shared_ptr<Module> module) {
  check_new_name("module", name);
  if (module == nullptr)
    fail<ValueError>(context(), ".register_module: expected a module for '", name,
                     "', got nullptr");
  // A module may appear in several places (shared), but never inside itself.
  bool cycle = false;
  std::function<void(const Module&)> contains_this = [&](const Module& m) {
    if (&m == this) cycle = true;
    for (const auto& [n, c] : m.children_)
      if (!cycle) contains_this(*c);
  };
  contains_this(*module);
  if (cycle)
    fail<ValueError>(context(), ".register_module: expected a module that does not contain '",
                     type_name(), "' itself, got one that does (registering '", name,
                     "' would make a cycle)");
  children_.emplace_back(std::move(name), module);
  if (module->parent_ == nullptr) module->parent_ = this;
  relabel_from_root();
}

void Module::unregister_module(const std::string& name) {
  const auto it = std::find_if(children_.begin(), children_.end(),
                               [&](const auto& child) { return child.first == name; });
  if (it == children_.end()) {
    std::string names;
    for (const auto& [n, c] : children_) names += (names.empty() ? "'" : ", '") + n + "'";
    fail<ValueError>("No Module with name `", name, "` is registered | ", context(),
                     ".unregister_module: expected the name of a child, got '", name, "'; ",
                     names.empty() ? std::string("it has no children") : "its children: " + names);
  }
  const std::shared_ptr<Module> child = it->second;
  children_.erase(it);
  if (child->parent_ == this) {
    child->parent_ = nullptr;
    child->relabel_from_root();  // a root of its own now: its paths start again from ""
  }
  relabel_from_root();
}

void Module::relabel_from_root() {
  Module* root = this;
  while (root->parent_ != nullptr) root = root->parent_;
  std::unordered_set<const Module*> seen_modules;
  std::unordered_set<const void*> named_tensors;
  std::function<void(Module&, const std::string&)> relabel = [&](Module& m,
                                                                 const std::string& path) {
    if (!seen_modules.insert(&m).second) return;  // a shared module keeps its first path
    m.path_ = path;
    for (auto& [n, p] : m.parameters_)
      if (named_tensors.insert(p.impl()).second) p.set_name(join(path, n));
    for (auto& b : m.buffers_)
      if (named_tensors.insert(b.buffer.impl()).second) b.buffer.set_name(join(path, b.name));
    for (auto& [n, c] : m.children_) relabel(*c, join(path, n));
  };
  relabel(*root, "");
}

// ---- the named_* walks ------------------------------------------------------------------------------

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  std::unordered_set<const Module*> memo;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m,
                                                                    const std::string& prefix) {
    if (!memo.insert(&m).second) return;
    out.emplace_back(prefix, &m);
    for (const auto& [n, c] : m.children_) walk(*c, join(prefix, n));
  };
  walk(*this, "");
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  for (const auto& [name, m] : std::as_const(*this).named_modules())
    out.emplace_back(name, const_cast<Module*>(m));  // we are non-const, so are our descendants
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::unordered_set<const Module*> memo;
  for (const auto& [n, c] : children_)
    if (memo.insert(c.get()).second) out.emplace_back(n, c);
  return out;
}

std::vector<std::pair<std::string, Parameter>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Parameter>> out;
  std::unordered_set<const void*> memo;  // identity de-duplication: a tied parameter once
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& [n, p] : m.parameters_)
      if (memo.insert(p.impl()).second) out.emplace_back(join(prefix, n), p);
  };
  if (!recurse)
    add("", *this);
  else
    for (const auto& [prefix, m] : named_modules()) add(prefix, *m);
  return out;
}

std::vector<Parameter> Module::parameters(bool recurse) const {
  std::vector<Parameter> out;
  for (auto& [n, p] : named_parameters(recurse)) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Buffer>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Buffer>> out;
  std::unordered_set<const void*> memo;
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& b : m.buffers_)
      if (memo.insert(b.buffer.impl()).second) out.emplace_back(join(prefix, b.name), b.buffer);
  };
  if (!recurse)
    add("", *this);
  else
    for (const auto& [prefix, m] : named_modules()) add(prefix, *m);
  return out;
}

std::vector<Buffer> Module::buffers(bool recurse) const {
  std::vector<Buffer> out;
  for (auto& [n, b] : named_buffers(recurse)) out.push_back(b);
  return out;
}

void Module::visit(const std::string& prefix,
                   const std::function<void(const std::string&, const Module&)>& fn) const {
  fn(prefix, *this);
  for (const auto& [n, c] : children_) c->visit(prefix + n + ".", fn);
}

// ---- training mode and gradients ------------------------------------------------------------------

Module& Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
  return *this;
}

Module& Module::requires_grad_(bool on) {
  for (const Parameter& p : parameters()) p.requires_grad_(on);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (const Parameter& p : parameters()) p.zero_grad(set_to_none);
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [n, c] : named_children()) c->apply(fn);
  fn(*this);
  return *this;
}

// ---- names and printing ---------------------------------------------------------------------------

std::string Module::type_name() const {
  // The dynamic type's name, demangled, without namespaces: "tapegrad::nn::Linear" -> "Linear".
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(typeid(*this).name(), nullptr, nullptr, &status), std::free);
  std::string name = status == 0 && demangled ? demangled.get() : typeid(*this).name();
  const std::size_t template_start = name.find('<');
  const std::size_t last_scope = name.rfind("::", template_start);
  return last_scope == std::string::npos ? name : name.substr(last_scope + 2);
}

void Module::extra_repr(std::ostream&) const {}

std::string Module::repr() const {
  // PyTorch's Module.__repr__: one line when there is a single line of extra_repr and no
  // children, otherwise one line per extra line and per child, indented by two spaces.
  std::ostringstream extra;
  extra_repr(extra);
  std::vector<std::string> lines;
  if (!extra.str().empty()) lines = split_lines(extra.str());
  const std::size_t extra_lines = lines.size();
  for (const auto& [n, c] : children_)
    lines.push_back("(" + n + "): " + detail::add_indent(c->repr(), 2));
  std::string s = type_name() + "(";
  if (extra_lines == 1 && children_.empty()) {
    s += lines[0];
  } else if (!lines.empty()) {
    for (const std::string& line : lines) s += "\n  " + line;
    s += "\n";
  }
  return s + ")";
}

std::string Module::context() const {
  return path_.empty() ? type_name() : type_name() + " '" + path_ + "'";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace tapegrad::nn
