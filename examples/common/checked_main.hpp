// examples/common/checked_main.hpp: how every example program ends, whatever goes wrong.
//
//     int main(int argc, char** argv) {
//       return examples::checked_main("gpt", [&] { return train(argc, argv); });
//     }
//
// It first writes one line to standard error: tapegrad's kernel set and OpenBLAS's kernel core.
// Exit status 0 or 1 is the program's own verdict; anything thrown becomes ONE line on standard
// error, "gpt: <what was wrong>", and exit status 2: a bad flag (CLI11's parse errors, read by
// parse_flags below), a file that cannot be read or written (tapegrad's DataError and
// CheckpointError, std::filesystem's errors, which name the path), bad values (ValueError), or
// memory the machine will not give (std::bad_alloc, std::bad_array_new_length, OutOfMemoryError).
// No abort, no core dump, no stack of CLI11 text.
#pragma once

#include <exception>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <tapegrad/core/cpu.hpp>

namespace examples {

/// Thrown to end the program with `status` after it has said why (e.g. after --help).
struct Exit {
  int status = 0;
};

/// A flag that cannot be used; the message names the flag. checked_main prints it.
struct FlagError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// app.parse with the outcome as exceptions: --help prints the help and throws Exit{0}; a bad
/// flag throws FlagError with CLI11's message ("--lr: expected a number in (0, 10], got 'nan'").
inline void parse_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    throw Exit{0};
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    throw Exit{0};
  } catch (const CLI::ParseError& e) {
    throw FlagError(std::string(e.what()) + " (--help lists the flags)");
  }
}

template <class Body>
int checked_main(const char* program, Body&& body) noexcept {
  const auto fail = [&](const std::string& what) {
    std::cout.flush();
    std::cerr << program << ": " << what << std::endl;
    return 2;
  };
  try {
    // First, what this run computes with: the kernel set and OpenBLAS's core (both change speed,
    // and OpenBLAS's core can change the last bits of a product).
    std::cerr << tapegrad::environment_line() << '\n';
    return body();
  } catch (const Exit& e) {
    return e.status;
  } catch (const std::bad_alloc&) {  // std::bad_array_new_length too
    return fail("out of memory: the machine did not give the memory asked for (smaller sizes?)");
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("stopped by an exception that is not a std::exception");
  }
}

}  // namespace examples
