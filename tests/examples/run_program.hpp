// tests/examples/run_program.hpp: runs a built example program as a learner would, and captures
// what it prints and how it ended.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "../test_files.hpp"

namespace tapegrad::testing {

struct ProgramOutput {
  int status = -1;  // the exit status; -1 for a signal (abort, segfault, timeout's kill)
  bool timed_out = false;
  std::string text;  // standard output and standard error, interleaved
};

/// `program args` under `timeout seconds`, with standard input closed, in the folder `cwd` (if
/// given), with `env` (variable assignments such as "PATH=/nonexistent", if given) added to the
/// environment tests/main.cpp set: one thread, no OpenBLAS core warning.
inline ProgramOutput run_program(const std::string& program, const std::string& args,
                                 int seconds = 120, const std::string& cwd = "",
                                 const std::string& env = "") {
  const std::string command = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + "timeout -s KILL " +
                              std::to_string(seconds) + " env " + env + " '" + program + "' " +
                              args + " </dev/null 2>&1";
  ProgramOutput out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.text.append(buffer, n);
  const int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  // timeout ends with 124 or 137 (128 + KILL) when it stopped the program; a crash inside the
  // program shows as 128 + its signal, or as no exit at all.
  out.timed_out = out.status == 124 || out.status == 137;
  if (out.status > 128 || out.timed_out) out.status = -1;
  return out;
}

/// Whether a program may run with its address space limited (`ulimit -v`). Under
/// AddressSanitizer it cannot: its shadow memory reserves terabytes of address space as it
/// starts. The programs are built with the same flags as the tests, so the test's own build says.
inline bool address_space_can_be_limited() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return false;
#else
  return true;
#endif
#else
  return true;
#endif
}

/// Ends the test case here, with a message, when `ulimit -v` cannot be used (see above).
#define TAPEGRAD_SKIP_UNLESS_ADDRESS_SPACE_CAN_BE_LIMITED()                                  \
  do {                                                                                      \
    if (!tapegrad::testing::address_space_can_be_limited()) {                               \
      MESSAGE("skipped: AddressSanitizer's shadow memory cannot start under ulimit -v");    \
      return;                                                                               \
    }                                                                                       \
  } while (false)

/// Shell quoting for one argument.
inline std::string quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Whether `text` contains `part`.
inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace tapegrad::testing
