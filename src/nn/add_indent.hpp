// src/nn/add_indent.hpp (private): what Module::repr and ModuleList::repr share to nest a child's
// printed form under its parent, as PyTorch's print(model) does.
#pragma once

#include <cstddef>
#include <string>

namespace tapegrad::nn::detail {

/// s with every line but the first indented by n spaces (PyTorch's _addindent).
inline std::string add_indent(const std::string& s, std::size_t n) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(n, ' ');
  }
  return out;
}

}  // namespace tapegrad::nn::detail
