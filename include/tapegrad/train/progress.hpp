// include/tapegrad/train/progress.hpp
//
// How a run speaks: numbers with a fixed number of decimals, durations a reader takes in at a
// glance, and where the lines go. Rank 0 alone prints; on a terminal with one rank the progress
// line is rewritten in place (\r, ESC[K); in a log, a pipe or under mpirun each is a plain line.
#pragma once

#include <string>

namespace tapegrad::train {

/// x with `digits` decimals: fixed(2.61987, 4) is "2.6199".
std::string fixed(double x, int digits);

/// "4.2 s", "38 s", "3 min 05 s".
std::string duration(double seconds);

struct Console {
  int rank = 0, world = 1;
  bool in_place = false;  ///< rewrite the progress line in place (a terminal, one rank)
  bool quiet = false;     ///< no progress lines
  /// What starts a line that replaces the progress line: "\r\x1b[K" in place, else "".
  std::string clear_line() const { return in_place ? "\r\x1b[K" : ""; }
};

}  // namespace tapegrad::train
