// src/pretrained/config_json.hpp (private): reading a Hugging Face config.json field by field,
// shared by GPT-2's and the Llama's readers. The file is parsed as hostile (bounded in size and in
// nesting); each field is read with its type and range checked, and every refusal is one
// CheckpointError (kind "InvalidConfig") naming the reader, the file and the field:
//     read_llama_config: 'dir/config.json': num_key_value_heads: expected a divisor of ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tapegrad::pretrained::detail {

/// A JSON value as a message shows it: at most 40 characters.
std::string shown(const nlohmann::json& v);

/// The JSON object of `path` (at most 1 MiB, nested at most 16 deep); `where` starts the messages.
nlohmann::json parse_config(const std::string& path, const std::string& where);

/// The fields of one config.json; every refusal names the file and the field.
class Fields {
 public:
  /// `required` is the hint a missing required integer gets: "a GPT-2 config.json gives ...".
  Fields(const nlohmann::json& root, std::string path, std::string where, std::string required)
      : root_(root), path_(std::move(path)), where_(std::move(where)),
        required_(std::move(required)) {}

  [[noreturn]] void refuse(const std::string& field, const std::string& message) const;
  const nlohmann::json* find(const std::string& field) const;
  /// A required integer in [low, high]. JSON's 768.0 is a float and "768" a string: both refused.
  std::int64_t integer(const std::string& field, std::int64_t low, std::int64_t high) const;
  /// The same, optional: nullopt when absent or null.
  std::optional<std::int64_t> optional_integer(const std::string& field, std::int64_t low,
                                               std::int64_t high) const;
  /// An optional number in (low, high) or [low, high]; `fallback` when absent.
  double number(const std::string& field, double fallback, double low, double high,
                bool open) const;
  /// An optional boolean; `fallback` when absent.
  bool boolean(const std::string& field, bool fallback) const;
  /// An optional boolean that must have `required` (transformers' default) when present.
  void boolean_must_be(const std::string& field, bool required, const std::string& why) const;
  /// An optional string; `fallback` when absent.
  std::string string(const std::string& field, const std::string& fallback) const;

 private:
  const nlohmann::json& root_;
  std::string path_, where_, required_;
};

}  // namespace tapegrad::pretrained::detail
