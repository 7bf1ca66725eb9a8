// include/tapegrad/train/stop_signals.hpp
//
// Ctrl-C (SIGINT) and SIGTERM stop a training run cleanly, without losing the work since its last
// checkpoint. While a StopSignals object lives:
//
//     train::StopSignals signals("gpt");             // from here on, a signal asks to stop
//     ...                                            // the Trainer checks between steps
//     return train::StopSignals::exit_status(run.stopped_by);   // 130, 143
//
// The first SIGINT or SIGTERM does not end the process: the handler only notes the signal (a
// handler may do almost nothing safely, so it sets one flag and writes one prepared line) and the
// trainer finishes its current step, saves last.safetensors, and returns; the program exits with
// 128 + the signal's number, as a shell reports a process ended by it. A second signal, of either
// kind, ends the process at once (the handler restores the default action and raises the signal
// again): nobody has to wait for a step they no longer want. Every checkpoint is written
// atomically, so that leaves no damage: the old file or the new one, and the next save removes
// the temporary a killed save leaves.
//
// One object at a time; its destructor restores the handlers that were there before.
#pragma once

#include <string>

namespace tapegrad::train {

class StopSignals {
 public:
  /// Installs the handler of SIGINT and SIGTERM. At the first signal it writes to standard error
  /// "WHO: SIGINT: stopping after the current step, to save the run (a second signal stops at
  /// once[HINT])"; `who` is "gpt" or "gpt rank 1 of 2 (pid 4321)", `hint` more to say.
  /// ValueError when another StopSignals is alive.
  explicit StopSignals(const std::string& who, const std::string& hint = "");
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// The first signal received since the object was made: 0, SIGINT or SIGTERM (0 when no
  /// StopSignals is alive).
  static int received();
  /// Whether a StopSignals object is alive (Trainer::fit installs one for its steps otherwise).
  static bool active();
  /// Forgets the signal received (a program that goes on after a stopped run, a test).
  static void clear();
  /// "SIGINT", "SIGTERM".
  static std::string name(int sig);
  /// The exit status of a program stopped by `sig`: 128 + its number (130 for SIGINT, 143 for
  /// SIGTERM).
  static int exit_status(int sig) { return 128 + sig; }

 private:
  struct Saved;  // the handlers to restore
  Saved* saved_;
};

}  // namespace tapegrad::train
