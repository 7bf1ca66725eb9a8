// tests/examples/background_program.hpp: a program started in the background, as a user starts a
// training run in one terminal and does something else in another: the test waits for a line of
// its output, sends it a signal or starts a second program beside it, then waits for its end.
//
//     BackgroundProgram run({TAPEGRAD_GPT, "--data", corpus, "--out", out}, dir / "run.log");
//     REQUIRE(run.wait_for("step 0: validation loss"));
//     run.send(SIGINT);
//     const Ended end = run.wait();   // end.status == 130, end.output: what it printed
//
// Every wait has a generous bound, a guard against a hang only: a slow machine makes the
// program slower, never the test wrong.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "../test_files.hpp"

extern char** environ;

namespace tapegrad::testing {

/// How a background program ended.
struct Ended {
  int status = -1;     ///< its exit status, or -1 when a signal ended it
  int signal = 0;      ///< that signal, or 0
  std::string output;  ///< standard output and standard error, as they came
};

class BackgroundProgram {
 public:
  /// Starts argv[0] with argv[1..], standard input from /dev/null, standard output and error
  /// into `log`, in the folder `cwd` (if given).
  BackgroundProgram(const std::vector<std::string>& argv, const std::filesystem::path& log,
                    const std::filesystem::path& cwd = {})
      : log_(log) {
    std::vector<std::string> words = argv;
    std::vector<char*> args;
    for (std::string& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    const int rc = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE_MESSAGE(rc == 0, "cannot start ", argv[0]);
  }
  ~BackgroundProgram() {
    if (pid_ > 0 && !ended_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  BackgroundProgram(const BackgroundProgram&) = delete;
  BackgroundProgram& operator=(const BackgroundProgram&) = delete;

  pid_t pid() const { return pid_; }
  /// What it has printed so far.
  std::string output() const { return bytes_of(log_); }

  /// Waits until its output holds `text`; false if it ended first (or after `seconds`).
  bool wait_for(const std::string& text, double seconds = 300) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
           seconds) {
      if (output().find(text) != std::string::npos) return true;
      if (!ended_ && ::waitpid(pid_, &status_, WNOHANG) == pid_) ended_ = true;
      if (ended_) return output().find(text) != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  void send(int sig) { REQUIRE(::kill(pid_, sig) == 0); }

  /// Waits for its end (killing it after `seconds`: then the test fails).
  Ended wait(double seconds = 300) {
    const auto start = std::chrono::steady_clock::now();
    while (!ended_) {
      if (::waitpid(pid_, &status_, WNOHANG) == pid_) {
        ended_ = true;
        break;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
          seconds) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        ended_ = true;
        FAIL("the program did not end within ", seconds, " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    Ended e;
    e.status = WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
    e.signal = WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
    e.output = output();
    return e;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = 0;
  int status_ = 0;
  bool ended_ = false;
};

}  // namespace tapegrad::testing
