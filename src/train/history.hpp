// src/train/history.hpp (private to the library): the run's record as checkpoint notes, every bit
// kept, and read back with every value checked (a checkpoint may have been edited or damaged).
//
//   history.train   the training loss of every step, hex floats
//   history.val     "step loss step loss ...", from the validation before training (step 0)
//   best_val        the validation loss best.safetensors holds, a hex float or "inf"
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tapegrad::train::detail {

/// Floats as text with every bit kept (hex floats).
std::string floats_text(const std::vector<float>& v);
/// The inverse of floats_text; CheckpointError naming `what` for a word that is not a number.
std::vector<float> floats_from(const std::string& text, const std::string& what);
/// history.val of a run at `step`: (step, loss) pairs, steps rising within [0, step] from step 0.
std::string val_history_text(const std::vector<std::pair<std::int64_t, float>>& history);
std::vector<std::pair<std::int64_t, float>> val_history_from(const std::string& text,
                                                             std::int64_t step,
                                                             const std::string& path);
/// best_val: a loss >= 0 or "inf" (none yet), every bit kept.
std::string best_val_text(double v);
double best_val_from(const std::string& text, const std::string& path);

}  // namespace tapegrad::train::detail
