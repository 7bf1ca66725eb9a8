// src/autograd/names.cpp: names that live as long as the program (module paths and op names built
// at run time), so that an entry can keep a plain pointer to its name. There are few.
#include <mutex>
#include <string>
#include <unordered_set>

#include "engine.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::autograd::detail {

namespace {
std::mutex names_mutex;
}  // namespace

const std::string* intern_name(const std::string& s) {
  static auto* names = new std::unordered_set<std::string>();  // never freed: entries point in
  std::lock_guard<std::mutex> lock(names_mutex);
  return &*names->insert(s).first;
}

const char* intern(const std::string& name) { return intern_name(name)->c_str(); }

}  // namespace tapegrad::autograd::detail
