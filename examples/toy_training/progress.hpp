// examples/toy_training/progress.hpp: the line that moves while training runs, and the number
// formats the program prints. On a terminal the line is rewritten in place; into a file or a pipe
// (a CI log) it becomes a plain line every tenth of the run.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace toy {

/// x with `digits` digits after the point.
inline std::string fixed(double x, int digits = 3) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << x;
  return os.str();
}
inline std::string percent(double fraction, int digits = 1) {
  return fixed(100.0 * fraction, digits) + " %";
}
inline std::string hex(std::uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(16) << std::setfill('0') << v;
  return os.str();
}
/// "0.4 s", "1 min 05 s".
inline std::string duration(double seconds) {
  if (seconds < 60) return fixed(seconds, seconds < 10 ? 1 : 0) + " s";
  const auto s = static_cast<std::int64_t>(seconds + 0.5);
  std::ostringstream os;
  os << s / 60 << " min " << std::setw(2) << std::setfill('0') << s % 60 << " s";
  return os.str();
}

/// The progress line. On a terminal it is rewritten in place (at most ten times a second);
/// when the output goes to a file or a pipe (a CI log), it becomes a plain line every tenth of
/// the run, because a log full of carriage returns is unreadable.
class Progress {
 public:
  Progress(std::int64_t first_step, std::int64_t last_step)
      : first_(first_step),
        last_(last_step),
        in_place_(isatty(fileno(stdout)) != 0),
        start_(std::chrono::steady_clock::now()) {}

  /// After step `step` (1-based) of the run, having seen `tokens` words since this run started.
  void update(std::int64_t step, double loss, std::int64_t tokens, double lr) {
    const double elapsed = seconds();
    const bool last = step == last_;
    if (in_place_) {
      if (!last && elapsed - shown_at_ < 0.1) return;
    } else {
      const std::int64_t every = std::max<std::int64_t>(1, (last_ - first_) / 10);
      if (!last && (step - first_) % every != 0) return;
    }
    shown_at_ = elapsed;
    const double done = double(step - first_), left = double(last_ - step);
    std::ostringstream line;
    const auto tokens_per_second =
        static_cast<std::int64_t>(double(tokens) / std::max(elapsed, 1e-9));
    line << "step " << std::setw(int(std::to_string(last_).size())) << step << "/" << last_
         << "  loss " << fixed(loss, 4) << "  " << std::setw(7) << tokens_per_second
         << " tokens/s  lr " << std::scientific << std::setprecision(2) << lr << std::defaultfloat
         << "  ETA " << duration(done > 0 ? elapsed / done * left : 0.0);
    if (in_place_)
      std::cout << '\r' << line.str() << "\x1b[K" << (last ? "\n" : "") << std::flush;
    else
      std::cout << line.str() << '\n';
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::int64_t first_, last_;
  bool in_place_;
  std::chrono::steady_clock::time_point start_;
  double shown_at_ = -1.0;
};

}  // namespace toy
