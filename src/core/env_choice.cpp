// src/core/env_choice.cpp: an option forced by an environment variable (env_choice.hpp).
#include "env_choice.hpp"

#include <cstdlib>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::detail {

std::string one_of(std::span<const std::string_view> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  return out;
}

ForcedChoice forced_by_env(const char* variable, std::span<const std::string_view> names) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return {};
  ForcedChoice forced{-1, std::string(variable) + "=" + value};
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == value) forced.index = static_cast<int>(i);
  check<ValueError>(forced.index >= 0, forced.where, ": expected ", one_of(names), ", got '", value,
                    "'");
  return forced;
}

}  // namespace tapegrad::detail
