// src/train/child_process.hpp (private to the library): how a run starts another program (gnuplot)
// without a shell.
//
//     const std::string gnuplot = detail::find_on_path("gnuplot");
//     detail::ProgramRun r = detail::run_program({gnuplot}, run_folder, script,
//                                                    [&](std::string_view png) { out.write(png); });
//
// A command line for the shell (std::system, popen) turns any path or text a user gives into shell
// syntax: `--out "x'; touch INJECTED; '"` ran `touch`. Here the program is started with
// posix_spawn and an argument vector, so nothing is ever parsed by a shell; it runs in the folder
// `cwd` (posix_spawn_file_actions_addchdir_np, glibc 2.29), so the files it uses are named by
// plain relative names and no path of the user's appears in its arguments or its input either.
//
// Its standard input is `input`, read from a file in memory (memfd_create): the program sees the
// bytes, then the end of the file, and can never wait for more (a terminal, a pipe nobody
// writes). Its standard output goes to `output` piece by piece as it comes, its standard error is
// collected, and run_program returns when it has ended. Linux only.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::train::detail {

/// The program `name` if an executable of that name is in a folder of $PATH, else "".
std::string find_on_path(const std::string& name);

/// How a program run by run_program ended.
struct ProgramRun {
  int exit_status = -1;  ///< its exit status, or -1 when a signal ended it
  int signal = 0;        ///< the signal that ended it, or 0
  std::string errors;    ///< what it wrote to standard error
  bool ok() const { return exit_status == 0; }
};

/// Runs the program argv[0] (a path: find_on_path gives one) with the arguments argv[1..] in the
/// folder `cwd`, `input` as its standard input, its standard output handed to `output` as it
/// comes; waits for it to end. std::runtime_error when it cannot be started. If `output` throws,
/// the program is killed and waited for before the exception goes on.
ProgramRun run_program(const std::vector<std::string>& argv, const std::string& cwd,
                       std::string_view input, const std::function<void(std::string_view)>& output);

}  // namespace tapegrad::train::detail
