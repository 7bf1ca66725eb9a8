// examples/common/stop_signals.hpp: Ctrl-C (SIGINT) and SIGTERM stop a training run cleanly.
//
//     examples::StopSignals signals("gpt");         // from here on, a signal asks to stop
//     while (step < steps) {
//       if (examples::StopSignals::received()) break;  // then save, say how to resume, exit
//       train_step();
//     }
//     return examples::StopSignals::exit_status(examples::StopSignals::received());  // 130, 143
//
// The first SIGINT or SIGTERM does not end the process: the handler only notes the signal (a
// handler may do almost nothing safely, so it sets one flag and writes one prepared line) and the
// program finishes its current step, saves, and exits with 128 + the signal's number, as a shell
// reports a process ended by it. A second signal, of either kind, ends the process at once (the
// handler restores the default action and raises the signal again): nobody has to wait for a
// step they no longer want. Files written atomically are never left half-written by it.
//
// One object at a time; its destructor restores the handlers that were there before.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

namespace examples {

class StopSignals {
 public:
  /// Installs the handler of SIGINT and SIGTERM. At the first signal it writes to standard error
  /// "WHO: SIGINT: stopping after the current step, to save the run (a second signal stops at
  /// once[HINT])"; `who` is "gpt" or "gpt rank 1 of 2 (pid 4321)", `hint` more to say.
  explicit StopSignals(const std::string& who, const std::string& hint = "") {
    if (installed_) throw std::logic_error("StopSignals: one object at a time");
    for (const int sig : {SIGINT, SIGTERM}) {
      Notice& n = sig == SIGINT ? int_notice_ : term_notice_;
      const std::string text = who + ": " + name(sig) +
                               ": stopping after the current step, to save the run (a second "
                               "signal stops at once" +
                               hint + ")\n";
      n.length = std::min(text.size(), sizeof n.text);
      std::memcpy(n.text, text.data(), n.length);
    }
    received_ = 0;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // reads and writes in progress go on instead of failing
    ::sigaction(SIGINT, &action, &previous_int_);
    ::sigaction(SIGTERM, &action, &previous_term_);
    installed_ = true;
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &previous_int_, nullptr);
    ::sigaction(SIGTERM, &previous_term_, nullptr);
    installed_ = false;
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// The first signal received since the object was made: 0, SIGINT or SIGTERM.
  static int received() { return received_; }
  /// "SIGINT", "SIGTERM".
  static std::string name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
  }
  /// The exit status of a program stopped by `sig`: 128 + its number (130 for SIGINT, 143 for
  /// SIGTERM).
  static int exit_status(int sig) { return 128 + sig; }

 private:
  struct Notice {
    char text[512];
    std::size_t length;
  };

  // Async-signal-safe: it reads and writes only the flag and prepared bytes, and calls only
  // write, signal and raise.
  static void on_signal(int sig) {
    if (received_ != 0) {  // the second: the default action (the process ends of it)
      ::signal(sig, SIG_DFL);
      ::raise(sig);
      return;
    }
    received_ = sig;
    const Notice& n = sig == SIGINT ? int_notice_ : term_notice_;
    const ssize_t written = ::write(STDERR_FILENO, n.text, n.length);
    (void)written;
  }

  static inline volatile std::sig_atomic_t received_ = 0;
  static inline bool installed_ = false;
  static inline Notice int_notice_, term_notice_;
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

}  // namespace examples
