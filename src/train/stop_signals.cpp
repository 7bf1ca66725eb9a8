// src/train/stop_signals.cpp: the first SIGINT/SIGTERM asks the run to stop after its step; the
// second ends the process (train/stop_signals.hpp).
#include "tapegrad/train/stop_signals.hpp"

#include <signal.h>

#include <atomic>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::train {

namespace {

volatile sig_atomic_t requested = 0;  // the first signal's number; written by the handler only
std::atomic<bool> installed{false};
struct sigaction previous_int {}, previous_term {};

// Async-signal-safe: stores the number, or, when one was stored already, restores the default
// action and raises the signal again, which ends the process as the signal would have.
extern "C" void on_stop_signal(int signal) {
  if (requested == 0) {
    requested = signal;
    return;
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal, &default_action, nullptr);
  raise(signal);
}

}  // namespace

StopSignals::StopSignals() {
  check<ValueError>(!installed.exchange(true),
                    "StopSignals: the handlers are installed already (one object at a time)");
  requested = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a read or write the signal interrupts goes on
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
  installed = false;
}

int stop_requested() { return requested; }

void clear_stop_request() { requested = 0; }

}  // namespace tapegrad::train
