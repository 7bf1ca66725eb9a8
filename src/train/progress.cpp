// src/train/progress.cpp: numbers and durations for a run's lines (train/progress.hpp).
#include "tapegrad/train/progress.hpp"

#include <cstdint>
#include <iomanip>
#include <sstream>

namespace tapegrad::train {

std::string fixed(double x, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << x;
  return os.str();
}

std::string duration(double seconds) {
  if (seconds < 60) return fixed(seconds, seconds < 10 ? 1 : 0) + " s";
  const auto s = static_cast<std::int64_t>(seconds + 0.5);
  std::ostringstream os;
  os << s / 60 << " min " << std::setw(2) << std::setfill('0') << s % 60 << " s";
  return os.str();
}

}  // namespace tapegrad::train
