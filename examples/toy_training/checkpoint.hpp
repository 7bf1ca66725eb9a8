// examples/toy_training/checkpoint.hpp: saving toy_training's run and resuming it.
//
// Everything an exact resume needs goes into ONE safetensors file: tapegrad's TrainingCheckpoint
// saves the model, the optimizers with their schedules, the generator of the dropout masks and the
// step (toy_training.cpp's tracked_state lists them); save_checkpoint adds the run's settings and
// its loss history as "extra" text, so that a resumed run is the same run and its report and loss
// curve cover all of it. read_resume_file and resume read them back, checking everything.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "flag_checks.hpp"
#include "measure.hpp"
#include "settings.hpp"

namespace toy {

namespace fs = std::filesystem;
namespace io = tapegrad::io;
using tapegrad::CheckpointError;

/// v with enough digits to read back the same double.
inline std::string exact(double v) {
  std::ostringstream os;
  os.precision(17);  // enough digits to read back the same double
  os << v;
  return os.str();
}

/// The settings that make a run what it is, as the text of their flags (what a checkpoint stores).
inline std::map<std::string, std::string> settings_text(const Settings& s) {
  return {{"seed", std::to_string(s.seed)},
          {"vocab", std::to_string(s.vocab)},
          {"synonyms", std::to_string(s.synonyms)},
          {"d-model", std::to_string(s.d_model)},
          {"batch-size", std::to_string(s.batch_size)},
          {"lr", exact(s.lr)},
          {"warmup", std::to_string(s.warmup)},
          {"sparse", s.sparse ? "1" : "0"}};
}

/// Saves the tracked state at step --steps, with the settings and the loss history as extra text.
inline void save_checkpoint(const io::TrainingCheckpoint& state, const Settings& s,
                            const LossHistory& loss) {
  std::map<std::string, std::string> extra = settings_text(s);
  std::string train, held_out;
  for (const double l : loss.train) train += exact(l) + " ";
  for (const auto& [step, l] : loss.held_out)
    held_out += std::to_string(step) + ":" + exact(l) + " ";
  extra["loss"] = train;
  extra["held-out-loss"] = held_out;
  fs::create_directories(fs::absolute(s.checkpoint).parent_path());
  state.save(s.checkpoint, io::TrainingProgress(s.steps, s.steps, extra));
}

// Reads --resume's file, checking all of it, and takes the run's settings from it: a resumed run
// continues the same run. Each stored setting passes the rule of its flag, and the settings
// together pass check_settings, as if they had been given on the command line. A flag given with
// another value is an error, not a silent change.
inline io::SafetensorsFile read_resume_file(Settings& s, const std::set<std::string>& given) {
  io::SafetensorsFile file;
  try {
    file = io::load_safetensors(s.resume);  // reads and checks the whole file before anything else
  } catch (const CheckpointError& e) {
    throw std::runtime_error(std::string("--resume: ") + e.what());
  }
  const std::string where = "--resume '" + s.resume + "'";
  auto adopt = [&](const std::string& flag, auto& setting) {
    const std::optional<std::string> saved = file.metadata_value("progress.extra." + flag);
    if (!saved)
      throw std::runtime_error(
          where + ": expected a toy_training checkpoint, got a file without the setting --" + flag);
    std::string text = *saved;
    if (const std::string why = rule(flag)(text); !why.empty())
      throw std::runtime_error(where + ": the checkpoint's setting --" + flag +
                               " is refused: " + why);
    std::remove_reference_t<decltype(setting)> value{};
    CLI::detail::lexical_cast(text, value);  // cannot fail: the rule accepted the text
    if (given.count("--" + flag) && value != setting)
      throw std::runtime_error("--" + flag + " " + settings_text(s).at(flag) +
                               ": the checkpoint's run used " + *saved +
                               "; leave the flag out to continue that run");
    setting = value;
  };
  adopt("seed", s.seed), adopt("vocab", s.vocab), adopt("synonyms", s.synonyms),
      adopt("d-model", s.d_model);
  adopt("batch-size", s.batch_size), adopt("lr", s.lr), adopt("warmup", s.warmup),
      adopt("sparse", s.sparse);
  try {
    check_settings(s);
  } catch (const CLI::ValidationError& e) {
    throw std::runtime_error(where + ": the checkpoint's settings are refused: " + e.what());
  }
  return file;
}

// A number as the checkpoint stores a loss: strtod's whole text, or nullopt. "inf" and "nan" read
// back too (a loss can overflow while the weights are still finite); a run whose optimizer
// moments went NaN is refused by the checkpoint's own value checks.
inline std::optional<double> stored_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// Restores the tracked state from the file (all or nothing) and the loss history; returns the step.
inline std::int64_t resume(io::TrainingCheckpoint& state, io::SafetensorsFile file,
                           const Settings& s, RunRecord& run) {
  const std::string where = "--resume '" + s.resume + "'";
  io::TrainingProgress progress;
  try {
    progress = state.restore(std::move(file), s.resume);  // all or nothing
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--resume: ") + e.what());
  }
  if (progress.step < 1)
    throw std::runtime_error(where +
                             ": expected the number of steps the run took (at least 1), got " +
                             std::to_string(progress.step));
  if (progress.step >= s.steps)
    throw std::runtime_error(where + ": the run is at step " + std::to_string(progress.step) +
                             " already; ask for more with --steps");
  std::istringstream train(progress.extra.count("loss") ? progress.extra.at("loss") : "");
  for (std::string l; train >> l;) {
    const auto loss = stored_number(l);
    if (!loss)
      throw std::runtime_error(where + ": expected the loss of step " +
                               std::to_string(run.loss.train.size() + 1) + " as a number, got '" +
                               l + "'");
    run.loss.train.push_back(*loss);
  }
  std::istringstream held_out(
      progress.extra.count("held-out-loss") ? progress.extra.at("held-out-loss") : "");
  for (std::string item; held_out >> item;) {
    const std::size_t colon = item.find(':');
    std::int64_t step = -1;
    const auto loss =
        colon == std::string::npos ? std::nullopt : stored_number(item.substr(colon + 1));
    if (!loss || !parse_integer(item.substr(0, colon), step) || step < 0 || step > progress.step)
      throw std::runtime_error(where +
                               ": expected held-out losses as step:loss with a step in [0, " +
                               std::to_string(progress.step) + "], got '" + item + "'");
    run.loss.held_out.push_back({step, *loss});
  }
  if (std::int64_t(run.loss.train.size()) != progress.step || run.loss.held_out.empty())
    throw std::runtime_error(where + ": expected the loss of each of its " +
                             std::to_string(progress.step) + " steps, got " +
                             std::to_string(run.loss.train.size()));
  return progress.step;
}

}  // namespace toy
