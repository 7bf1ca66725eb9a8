// src/io/checkpoint_names.hpp (private to the library)
//
// Reading the names of a checkpoint's layout: "model.{key}", "optim.{k}.state.{id}.{name}",
// "progress.step" = "1200". Hostile files may hold anything, so numbers are parsed whole and
// checked to fit.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::io {

/// A decimal integer, the whole text (no sign for unsigned T, no spaces or '+'), that fits in T.
template <class T>
std::optional<T> parse_integer(std::string_view text) {
  T value{};
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (err != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

/// Every name of the file, tensors and aliases, that starts with `prefix`.
inline std::vector<std::string> names_under(const SafetensorsFile& file,
                                            const std::string& prefix) {
  std::vector<std::string> names;
  for (const TensorRecord& r : file.tensors())
    if (r.name.starts_with(prefix)) names.push_back(r.name);
  for (const auto& [alias, target] : file.aliases())
    if (alias.starts_with(prefix)) names.push_back(alias);
  return names;
}

/// Whether the dtype is one tapegrad converts to float32.
inline bool is_float(Dtype d) {
  return d == Dtype::F32 || d == Dtype::F64 || d == Dtype::F16 || d == Dtype::BF16;
}

}  // namespace tapegrad::io
