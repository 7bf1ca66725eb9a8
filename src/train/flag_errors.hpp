// src/train/flag_errors.hpp (private to the library): the flag a program was given, put in front
// of what the library's readers say. load_gpt2, load_safetensors or TokenFile::open name the file
// and themselves; a learner who typed --init-from or --model wants to read that flag first.
#pragma once

#include <string>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::train::detail {

/// Runs `body`; an error it throws is thrown again with "flag: " in front of its message (unless
/// the message starts with the flag already), of the same type.
template <class Body>
auto naming_flag(const std::string& flag, Body&& body) -> decltype(body()) {
  const auto named = [&](const char* what) {
    const std::string text = what;
    return text.rfind(flag, 0) == 0 ? text : flag + ": " + text;
  };
  try {
    return body();
  } catch (const CheckpointError& e) {
    throw CheckpointError(named(e.what()), e.kind);
  } catch (const DataError& e) {
    throw DataError(named(e.what()));
  } catch (const StateDictError& e) {
    throw StateDictError(named(e.what()), e.missing, e.unexpected, e.mismatches);
  } catch (const ValueError& e) {
    throw ValueError(named(e.what()));
  }
}

}  // namespace tapegrad::train::detail
