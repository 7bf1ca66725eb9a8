// src/train/stop_signals.cpp: the first SIGINT/SIGTERM asks the run to stop after its step; the
// second ends the process (train/stop_signals.hpp).
#include "tapegrad/train/stop_signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::train {

namespace {

struct Notice {
  char text[512];
  std::size_t length;
};

volatile std::sig_atomic_t received_signal = 0;
bool installed = false;
Notice int_notice, term_notice;

// Async-signal-safe: it reads and writes only the flag and prepared bytes, and calls only write,
// signal and raise.
extern "C" void on_signal(int sig) {
  if (received_signal != 0) {  // the second: the default action (the process ends of it)
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  received_signal = sig;
  const Notice& n = sig == SIGINT ? int_notice : term_notice;
  const ssize_t written = ::write(STDERR_FILENO, n.text, n.length);
  (void)written;
}

}  // namespace

struct StopSignals::Saved {
  struct sigaction previous_int {};
  struct sigaction previous_term {};
};

StopSignals::StopSignals(const std::string& who, const std::string& hint) {
  check<ValueError>(!installed, "StopSignals: one object at a time");
  for (const int sig : {SIGINT, SIGTERM}) {
    Notice& n = sig == SIGINT ? int_notice : term_notice;
    const std::string text = who + ": " + name(sig) +
                             ": stopping after the current step, to save the run (a second "
                             "signal stops at once" +
                             hint + ")\n";
    n.length = std::min(text.size(), sizeof n.text);
    std::memcpy(n.text, text.data(), n.length);
  }
  received_signal = 0;
  saved_ = new Saved;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress go on instead of failing
  ::sigaction(SIGINT, &action, &saved_->previous_int);
  ::sigaction(SIGTERM, &action, &saved_->previous_term);
  installed = true;
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &saved_->previous_int, nullptr);
  ::sigaction(SIGTERM, &saved_->previous_term, nullptr);
  delete saved_;
  installed = false;
}

int StopSignals::received() { return received_signal; }

bool StopSignals::active() { return installed; }

void StopSignals::clear() { received_signal = 0; }

std::string StopSignals::name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
}

}  // namespace tapegrad::train
