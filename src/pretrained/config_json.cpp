// src/pretrained/config_json.cpp: a Hugging Face config.json read field by field (config_json.hpp).
#include "config_json.hpp"

#include <sstream>

#include "tapegrad/core/errors.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::pretrained::detail {

using json = nlohmann::json;

namespace {
// config.json is a few hundred bytes; a megabyte is no config.
constexpr std::size_t kMaxConfigBytes = std::size_t(1) << 20;
}  // namespace

std::string shown(const json& v) {
  const std::string text = v.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

json parse_config(const std::string& path, const std::string& where) {
  const auto refuse = [&](const std::string& why) {
    throw CheckpointError(where + ": '" + path + "': " + why, "InvalidConfig");
  };
  std::string text;
  try {
    text = io::read_file(path, where, kMaxConfigBytes);
  } catch (const CheckpointError& e) {
    if (std::string(e.what()).find("expected at most") == std::string::npos) throw;
    refuse("expected a config.json of at most 1 MiB (1048576 bytes): " + std::string(e.what()));
  }
  // Nesting deeper than a few levels is no model's config (GPT-2's "task_specific_params" nests 3
  // deep); refusing it as it is met bounds the parser's work on a hostile file.
  struct TooDeep {};
  const json::parser_callback_t watch = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= 16)
      throw TooDeep{};
    return true;
  };
  json root;
  try {
    root = json::parse(text, watch);
  } catch (const TooDeep&) {
    refuse("expected a JSON object of settings, got values nested more than 16 deep");
  } catch (const json::exception& e) {
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    refuse("not JSON: " + why);
  }
  if (!root.is_object())
    refuse("expected a JSON object of settings, got " + std::string(root.type_name()));
  return root;
}

void Fields::refuse(const std::string& field, const std::string& message) const {
  throw CheckpointError(where_ + ": '" + path_ + "': " + field + ": " + message, "InvalidConfig");
}

const json* Fields::find(const std::string& field) const {
  const auto it = root_.find(field);
  return it == root_.end() ? nullptr : &*it;
}

std::int64_t Fields::integer(const std::string& field, std::int64_t low, std::int64_t high) const {
  const json* v = find(field);
  if (!v) refuse(field, "missing (" + required_ + ")");
  if (!v->is_number_integer())
    refuse(field, "expected an integer, got " + std::string(v->type_name()) + " " + shown(*v));
  const bool in_range = v->is_number_unsigned()
                            ? v->get<std::uint64_t>() <= std::uint64_t(high) &&
                                  v->get<std::uint64_t>() >= std::uint64_t(low)
                            : v->get<std::int64_t>() >= low && v->get<std::int64_t>() <= high;
  if (!in_range)
    refuse(field, "expected an integer in [" + std::to_string(low) + ", " + std::to_string(high) +
                      "], got " + shown(*v));
  return v->get<std::int64_t>();
}

std::optional<std::int64_t> Fields::optional_integer(const std::string& field, std::int64_t low,
                                                     std::int64_t high) const {
  const json* v = find(field);
  if (!v || v->is_null()) return std::nullopt;
  return integer(field, low, high);
}

double Fields::number(const std::string& field, double fallback, double low, double high,
                      bool open) const {
  const json* v = find(field);
  if (!v) return fallback;
  if (!v->is_number())
    refuse(field, "expected a number, got " + std::string(v->type_name()) + " " + shown(*v));
  const double x = v->get<double>();
  if (!(open ? x > low && x < high : x >= low && x <= high)) {
    std::ostringstream range;
    range << (open ? "(" : "[") << low << ", " << high << (open ? ")" : "]");
    refuse(field, "expected a number in " + range.str() + ", got " + shown(*v));
  }
  return x;
}

bool Fields::boolean(const std::string& field, bool fallback) const {
  const json* v = find(field);
  if (!v) return fallback;
  if (!v->is_boolean())
    refuse(field, "expected a boolean, got " + std::string(v->type_name()) + " " + shown(*v));
  return v->get<bool>();
}

void Fields::boolean_must_be(const std::string& field, bool required,
                             const std::string& why) const {
  if (boolean(field, required) != required) refuse(field, why);
}

std::string Fields::string(const std::string& field, const std::string& fallback) const {
  const json* v = find(field);
  if (!v) return fallback;
  if (!v->is_string())
    refuse(field, "expected a string, got " + std::string(v->type_name()) + " " + shown(*v));
  return v->get<std::string>();
}

}  // namespace tapegrad::pretrained::detail
