// src/train/history.cpp: the run's record as checkpoint notes (history.hpp).
#include "history.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "tapegrad/core/errors.hpp"

namespace tapegrad::train::detail {

std::string floats_text(const std::vector<float>& v) {
  std::ostringstream os;
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? " " : "") << std::hexfloat << v[i];
  return os.str();
}

std::vector<float> floats_from(const std::string& text, const std::string& what) {
  std::vector<float> v;
  std::istringstream is(text);
  for (std::string word; is >> word;) {
    char* end = nullptr;
    v.push_back(std::strtof(word.c_str(), &end));
    if (end != word.c_str() + word.size())
      throw CheckpointError(what + ": expected numbers, got '" + word.substr(0, 40) + "'",
                            "InvalidCheckpoint");
  }
  return v;
}

std::string val_history_text(const std::vector<std::pair<std::int64_t, float>>& history) {
  std::vector<float> v;
  for (const auto& [at, loss] : history) v.push_back(float(at)), v.push_back(loss);
  return floats_text(v);
}

std::vector<std::pair<std::int64_t, float>> val_history_from(const std::string& text,
                                                             std::int64_t step,
                                                             const std::string& path) {
  const std::vector<float> v = floats_from(text, "'" + path + "': history.val");
  std::vector<std::pair<std::int64_t, float>> history;
  for (std::size_t i = 0; i + 1 < v.size(); i += 2) {
    const float at = v[i];
    const bool rising = history.empty() ? at == 0 : at > float(history.back().first);
    if (!(rising && at <= float(step) && at == std::floor(at)) || v.size() % 2 != 0)
      throw CheckpointError("'" + path +
                                "': the note 'history.val': expected (step, loss) pairs from step "
                                "0 rising to the run's step " +
                                std::to_string(step),
                            "InvalidCheckpoint");
    history.emplace_back(std::int64_t(at), v[i + 1]);
  }
  if (history.empty())
    throw CheckpointError("'" + path + "': the note 'history.val' holds no validation",
                          "InvalidCheckpoint");
  return history;
}

std::string best_val_text(double v) {
  std::ostringstream b;
  b << std::hexfloat << v;
  return b.str();
}

double best_val_from(const std::string& text, const std::string& path) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= 0))
    throw CheckpointError("'" + path + "': the note 'best_val': expected a loss >= 0, got '" +
                              text.substr(0, 40) + "'",
                          "InvalidCheckpoint");
  return v;
}

}  // namespace tapegrad::train::detail
