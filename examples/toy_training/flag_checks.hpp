// examples/toy_training/flag_checks.hpp: CLI11 validators whose messages say what was expected,
//
//     --steps: expected an integer in [1, 10000000], got 'abc'
//
// (CLI11's own PositiveNumber prints a 300-digit range, and "-1" converts silently to an unsigned
// 2^64 - 1.) A flag that passes its check converts without error. The same validators check the
// settings a checkpoint stores when a run is resumed (a Validator can be called on any text).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

namespace toy {

/// The whole text as an integer of type Int, without overflow.
template <class Int>
bool parse_integer(const std::string& text, Int& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}
inline CLI::Validator integer_in(std::int64_t low, std::int64_t high) {
  const std::string range = "[" + std::to_string(low) + ", " + std::to_string(high) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::int64_t v = 0;
        const bool ok = parse_integer(text, v) && v >= low && v <= high;
        return ok ? "" : "expected an integer in " + range + ", got '" + text + "'";
      },
      "INT in " + range);
}
inline CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        return parse_integer(text, v) ? "" : "expected an integer in [0, 2^64), got '" + text + "'";
      },
      "UINT");
}
inline CLI::Validator zero_or_one() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text == "0" || text == "1" ? "" : "expected 0 or 1, got '" + text + "'";
      },
      "0 or 1");
}
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        const bool ok = CLI::detail::lexical_cast(text, v) && v > 0 && std::isfinite(v);
        return ok ? "" : "expected a number > 0, got '" + text + "'";
      },
      "> 0");
}

}  // namespace toy
