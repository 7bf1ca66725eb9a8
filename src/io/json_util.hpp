// src/io/json_util.hpp (private to the library; the checkpoint code's only JSON, nlohmann-json,
// is included from here and from the files that make or parse JSON text)
//
// JSON from a file is hostile: nesting is bounded (nlohmann's parser recurses, so a deep text
// would exhaust the stack) and values are quoted back in messages, short and on one line.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tapegrad::io {

/// Thrown by a parser callback when the text nests deeper than its format allows.
struct TooDeep {};

/// A JSON value in a message: short, on one line, invalid UTF-8 replaced.
inline std::string excerpt(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
inline std::string reason(const nlohmann::json::exception& e) {
  std::string why = e.what();
  if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
  return why;
}

}  // namespace tapegrad::io
