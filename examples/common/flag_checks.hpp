// examples/common/flag_checks.hpp: CLI11 validators whose messages say what was expected,
//
//     --lr: expected a number in (0, 10], got 'nan'
//     --steps: expected an integer in [1, 10000000], got '1e9'
//
// CLI11's own checks print a 300-digit range (PositiveNumber), let "nan" through every range
// (a comparison with NaN is false either way) and convert "-1" silently to an unsigned 2^64 - 1.
// Each validator here reads the whole text strictly (no "1abc", no leading space) and checks its
// range, so a flag that passes converts without error. The same functions check text read back
// from a checkpoint's notes (parse_integer, parse_number).
#pragma once

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

namespace flags {

/// The whole text as an integer of type Int, without overflow.
template <class Int>
bool parse_integer(const std::string& text, Int& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

/// The whole text as a finite or infinite double ("1e-3", "0x1p-4", "inf", "nan"); false for
/// empty text, text with anything after the number, leading space, or out of double's range.
inline bool parse_number(const std::string& text, double& value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno != ERANGE;
}

/// A number as a person writes it: 0.9, 1e-45, 1e+06.
inline std::string number_text(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
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

/// Which ends of a range belong to it: [low, high], (low, high], [low, high) or (low, high).
enum class Ends { closed, open_low, open_high, open };

/// The range as text, "(0, 10]".
inline std::string range_text(double low, double high, Ends ends) {
  const bool low_open = ends == Ends::open_low || ends == Ends::open;
  const bool high_open = ends == Ends::open_high || ends == Ends::open;
  return std::string(low_open ? "(" : "[") + number_text(low) + ", " + number_text(high) +
         (high_open ? ")" : "]");
}

inline bool in_range(double v, double low, double high, Ends ends) {
  const bool low_open = ends == Ends::open_low || ends == Ends::open;
  const bool high_open = ends == Ends::open_high || ends == Ends::open;
  return (low_open ? v > low : v >= low) && (high_open ? v < high : v <= high);  // false for NaN
}

inline CLI::Validator number_in(double low, double high, Ends ends = Ends::closed) {
  const std::string range = range_text(low, high, ends);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        const bool ok = parse_number(text, v) && in_range(v, low, high, ends);
        return ok ? "" : "expected a number in " + range + ", got '" + text + "'";
      },
      "NUMBER in " + range);
}

/// One of `choices`, spelled exactly.
inline CLI::Validator one_of(const std::vector<std::string>& choices) {
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        for (const std::string& c : choices)
          if (text == c) return "";
        return "expected one of " + list + ", got '" + text + "'";
      },
      list);
}

}  // namespace flags
