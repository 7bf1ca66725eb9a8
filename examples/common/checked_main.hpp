// examples/common/checked_main.hpp: how every example program ends, whatever goes wrong.
//
//     int main(int argc, char** argv) {
//       return examples::checked_main("gpt", [&] { return train(argc, argv); });
//     }
//
// It first writes one line to standard error: tapegrad's kernel set and OpenBLAS's kernel core.
// Exit status 0 or 1 is the program's own verdict; anything thrown becomes ONE line on standard
// error, "gpt: <what was wrong>" (a line end in it shown as \n), and exit status 2: a bad flag
// (CLI11's parse errors, read by parse_flags below), a file that cannot be read or written
// (tapegrad's DataError and CheckpointError, std::filesystem's errors, which name the path), bad
// values (ValueError), or memory the machine will not give (std::bad_alloc,
// std::bad_array_new_length, OutOfMemoryError). No abort, no core dump, no stack of CLI11 text.
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

/// CLI11's `message` about a flag, with the flag named as it was typed: CLI11 names an option by
/// its first name ("--model: 1 required TEXT missing" for `--checkpoint`, gpt_sample's other name
/// of --model), which the user may never have written.
inline std::string as_typed(const CLI::App& app, int argc, char** argv, std::string message) {
  const std::size_t colon = message.find(':');
  if (colon == std::string::npos) return message;
  const std::string name = message.substr(0, colon);
  const CLI::Option* option = app.get_option_no_throw(name);
  if (option == nullptr) return message;
  for (int i = argc - 1; i > 0; --i) {  // the last one typed is the one CLI11 stopped at
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (arg != name && option->check_lname(arg.substr(2))) return arg + message.substr(colon);
    if (arg == name) break;
  }
  return message;
}

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
  } catch (const CLI::RequiredError& e) {
    // CLI11 checks the required flags before it looks at what it did not know: a misspelt flag
    // (--checkpoint for --model) would be reported as "--model: 1 required TEXT missing" alone.
    std::string unknown;
    for (const std::string& arg : app.remaining()) unknown += (unknown.empty() ? "" : " ") + arg;
    const bool several = app.remaining().size() > 1;
    throw FlagError((unknown.empty()
                         ? ""
                         : std::string("The following argument") + (several ? "s were" : " was") +
                               " not expected: " + unknown + "; and ") +
                    e.what() + " (--help lists the flags)");
  } catch (const CLI::ParseError& e) {
    throw FlagError(as_typed(app, argc, argv, e.what()) + " (--help lists the flags)");
  }
}

/// `text` on one line: a line end, a tab or another control character that a flag's value or a
/// file's name brought into a message is shown escaped (\n, \x1b), so that the message stays
/// the one line it should be and cannot move the terminal's cursor.
inline std::string one_line(const std::string& text) {
  std::string line;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      line += "\\n";
    else if (c == '\r')
      line += "\\r";
    else if (c == '\t')
      line += "\\t";
    else if (u < 0x20 || u == 0x7F) {
      static constexpr char hex[] = "0123456789abcdef";
      line += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    } else {
      line += c;
    }
  }
  return line;
}

template <class Body>
int checked_main(const char* program, Body&& body) noexcept {
  const auto fail = [&](const std::string& what) {
    std::cout.flush();
    std::cerr << program << ": " << one_line(what) << std::endl;
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
