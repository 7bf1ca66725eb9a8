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

#include "../common/flag_checks.hpp"

namespace toy {

// The integers' validators are the examples' common ones (examples/common/flag_checks.hpp).
using flags::integer_in;
using flags::parse_integer;
using flags::unsigned_integer;

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
        // The whole text, as gpt's number flags read it: CLI11's lexical_cast took " 1" for 1.
        double v = 0;
        const bool ok = flags::parse_number(text, v) && v > 0 && std::isfinite(v);
        return ok ? "" : "expected a number > 0, got '" + text + "'";
      },
      "> 0");
}

}  // namespace toy
