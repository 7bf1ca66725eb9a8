// include/tapegrad/train/stop_signals.hpp
//
// Ctrl-C without losing the work. A training run that dies at SIGINT loses every step since its
// last checkpoint. While a StopSignals object lives, the first SIGINT or SIGTERM only raises a
// flag: the trainer sees it after the current step, saves last.safetensors and returns, and the
// program exits 128 + the signal (130 for Ctrl-C, 143 for SIGTERM), as a shell expects of a
// process the signal ended. A second signal ends the process at once, by the signal's default
// action: nothing is damaged, since every checkpoint is written atomically (the old file or the
// new one), and the next save removes the temporary a killed save leaves.
//
// The handler does nothing but store the signal number (an async-signal-safe write); the flag is
// read between steps. The previous handlers come back when the object is destroyed.
#pragma once

namespace tapegrad::train {

class StopSignals {
 public:
  /// Installs the handlers of SIGINT and SIGTERM. One object at a time (a second is a logic
  /// error: ValueError).
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

/// The first stop signal received since a StopSignals was installed (SIGINT, SIGTERM), or 0.
int stop_requested();

/// Forgets a stop request (for tests that send one signal after another run).
void clear_stop_request();

}  // namespace tapegrad::train
