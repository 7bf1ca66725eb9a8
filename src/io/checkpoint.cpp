// src/io/checkpoint.cpp
//
// Models, optimizers and whole training runs in safetensors files, on top of the file layer
// (safetensors.hpp) and the optimizer-state layout (optimizer_state.cpp). Two rules shape every
// function here:
//   * a save moves the state's arrays into the file's contents (no copy) and streams them to a
//     temporary that replaces the old file atomically;
//   * a load reads and checks everything (the file, then what it would change) before changing
//     anything, and when a later part is refused after an earlier one was applied (the scheduler
//     after the optimizer, say), the earlier part is put back from a snapshot taken first. A
//     refused file therefore leaves model, optimizers, schedulers and generators as they were.
#include "tapegrad/io/checkpoint.hpp"

#include <cmath>
#include <functional>
#include <sstream>
#include <unordered_set>

#include "checkpoint_errors.hpp"
#include "checkpoint_names.hpp"
#include "float_values.hpp"
#include "optimizer_state.hpp"
#include "tapegrad/nn/dropout.hpp"

namespace tapegrad::io {

namespace {
const std::string kTrainingMarkerKey = "tapegrad.checkpoint";
const std::string kTrainingMarker = "training";
const std::string kModelPrefix = "model.";

// Sets a metadata entry unless it could be read back as a tied tensor (an entry whose value is a
// tensor's name): the informative entries of save() are skipped for a model with a tensor "pt".
void set_informative_metadata(SafetensorsFile& file, const std::string& key,
                              const std::string& value) {
  if (!file.contains(key) && !file.contains(value)) file.set_metadata(key, value);
}

// read_state_dict, with three choices left to the caller: the message's start, which keys must
// hold floats, and whether the values may be moved out of the file (`owned`: the same file, which
// the caller reads once) instead of copied. A non-float tensor whose key `must_be_float` rejects
// is kept as a placeholder, so that load_state_dict reports it as unexpected (a PyTorch integer
// buffer a tapegrad model lacks).
nn::StateDict state_dict_from(const SafetensorsFile& file, SafetensorsFile* owned,
                              const std::string& prefix, const std::string& where,
                              const std::function<bool(const std::string&)>& must_be_float) {
  nn::StateDict sd;
  std::unordered_set<std::string> with_values;
  const FloatValues values(file, owned);
  const auto value_of = [&](const std::string& name, const std::string& key) -> Array {
    const TensorRecord& r = file.record(name);
    if (is_float(r.dtype)) return values(name);
    if (must_be_float && !must_be_float(key)) return Array();
    fail<TypeError>(where, ": expected tensor ", in_quotes(key),
                    " to hold floating-point data (F32, F64, F16 or BF16), got dtype ",
                    dtype_name(r.dtype), "; tapegrad models hold float32 only");
  };
  for (const TensorRecord& r : file.tensors()) {
    if (!r.name.starts_with(prefix)) continue;
    std::string key = r.name.substr(prefix.size());
    sd.insert(key, value_of(r.name, key));
    with_values.insert(std::move(key));
  }
  for (const auto& [alias, target] : file.aliases()) {
    if (!alias.starts_with(prefix)) continue;
    const std::string key = alias.substr(prefix.size());
    // A tie inside the prefix stays a tie; one reaching outside it (only a hand-made file does
    // that) becomes a copy.
    if (target.starts_with(prefix) && with_values.contains(target.substr(prefix.size())))
      sd.add_alias(key, target.substr(prefix.size()));
    else
      sd.insert(key, value_of(alias, key));
  }
  return sd;
}

// Loads `scheduler_state` into `scheduler` (when there is one) and `state` into `optimizer`:
// both or neither. The optimizer's state is checked first; then the scheduler's load (atomic by
// itself) is the only one that can refuse, and the optimizer takes the moments without a copy.
void load_optimizer_and_scheduler(optim::Optimizer& optimizer, optim::OptimizerState&& state,
                                  optim::LambdaLR* scheduler,
                                  const std::optional<optim::LambdaLRState>& scheduler_state) {
  optimizer.check_state_dict(state);
  if (scheduler != nullptr) scheduler->load_state_dict(*scheduler_state);
  optimizer.load_state_dict(std::move(state));  // checked: nothing left to refuse
}

std::string optimizer_prefix(std::size_t k) { return "optim." + std::to_string(k) + "."; }
}  // namespace

// ---- building blocks ------------------------------------------------------------------------------

void add_state_dict(SafetensorsFile& file, nn::StateDict state, const std::string& prefix) {
  std::unordered_set<std::string> tied;
  for (const auto& [alias, target] : state.aliases()) tied.insert(alias);
  for (const std::string& key : state.keys())
    if (!tied.contains(key) && state.find(key) != nullptr)
      file.add(prefix + key, std::move(state.at(key)));
  for (const auto& [alias, target] : state.aliases())
    file.add_alias(prefix + alias, prefix + target);
}

nn::StateDict read_state_dict(const SafetensorsFile& file, const std::string& prefix) {
  return state_dict_from(file, nullptr, prefix, "read_state_dict", nullptr);
}

// ---- a model's weights ------------------------------------------------------------------------------

void save(const nn::Module& module, const std::string& path) {
  SafetensorsFile file;
  add_state_dict(file, module.state_dict());
  set_informative_metadata(file, "format", "pt");  // what safetensors' PyTorch writer puts
  set_informative_metadata(file, "framework", "tapegrad");
  save_safetensors(path, file);  // adds "tapegrad.version"
}

namespace {
// io::load's body: the module's state from `file` (its values moved out of `owned` when given).
nn::IncompatibleKeys load_from(nn::Module& module, const SafetensorsFile& file,
                               SafetensorsFile* owned, const std::string& path, bool strict) {
  const std::string where = where_in("io::load", path);
  const std::string prefix =
      file.metadata_value(kTrainingMarkerKey) == kTrainingMarker ? kModelPrefix : "";
  // Which keys must be floats: the module's own. Computed only when the file holds something else.
  std::optional<std::unordered_set<std::string>> own_keys;
  const auto is_module_key = [&](const std::string& key) {
    if (!own_keys) {
      const std::vector<std::string> keys = module.state_dict().keys();
      own_keys.emplace(keys.begin(), keys.end());
    }
    return own_keys->contains(key);
  };
  const nn::StateDict sd = state_dict_from(file, owned, prefix, where, is_module_key);
  try {
    return module.load_state_dict(sd, strict);
  } catch (const StateDictError& e) {  // PyTorch's text, then which file it was
    throw StateDictError(std::string(e.what()) + "\n\tcheckpoint: " + in_quotes(path), e.missing,
                         e.unexpected, e.mismatches);
  }
}
}  // namespace

nn::IncompatibleKeys load(nn::Module& module, const std::string& path, bool strict) {
  SafetensorsFile file = load_safetensors(path);
  return load_from(module, file, &file, path, strict);
}

nn::IncompatibleKeys load(nn::Module& module, const SafetensorsFile& file, const std::string& path,
                          bool strict) {
  return load_from(module, file, nullptr, path, strict);
}

nn::StateDict load_state_dict(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  const std::string prefix =
      file.metadata_value(kTrainingMarkerKey) == kTrainingMarker ? kModelPrefix : "";
  return state_dict_from(file, &file, prefix, where_in("io::load_state_dict", path), nullptr);
}

// ---- an optimizer's state ------------------------------------------------------------------------

void save_optimizer(const optim::Optimizer& optimizer, const std::string& path,
                    const optim::LambdaLR* scheduler) {
  SafetensorsFile file;
  std::optional<optim::LambdaLRState> scheduler_state;
  if (scheduler != nullptr) scheduler_state = scheduler->state_dict();
  add_optimizer_state(file, optimizer.state_dict(), scheduler_state ? &*scheduler_state : nullptr);
  file.set_metadata("framework", "tapegrad");
  save_safetensors(path, file);
}

void load_optimizer(optim::Optimizer& optimizer, const std::string& path,
                    optim::LambdaLR* scheduler) {
  SafetensorsFile file = load_safetensors(path);
  const std::string where = where_in("load_optimizer", path);
  optim::OptimizerState state = optimizer_state_from(file, &file, "", where);
  const std::optional<optim::LambdaLRState> scheduler_state = lambda_lr_state_from(file, "", where);
  if (scheduler != nullptr && !scheduler_state)
    invalid_checkpoint(
        where,
        "expected __metadata__ 'lr_scheduler' for the scheduler given, got none; the file was "
        "saved without a scheduler (save_optimizer(optimizer, path, &scheduler) saves one)");
  load_optimizer_and_scheduler(optimizer, std::move(state), scheduler, scheduler_state);
}

// ---- TrainingCheckpoint ---------------------------------------------------------------------------

namespace {
// The model's Dropout layers by path: their masks' streams are part of a run's state (seed and
// call count, two numbers each: nn/dropout.hpp).
std::vector<std::pair<std::string, nn::Dropout*>> dropouts_of(nn::Module& model) {
  std::vector<std::pair<std::string, nn::Dropout*>> out;
  for (const auto& [path, module] : model.named_modules())
    if (auto* d = dynamic_cast<nn::Dropout*>(module)) out.emplace_back(path, d);
  return out;
}

// What is wrong with a run's counters, or nullopt: the invariants save() keeps and load() checks.
// progress.step counts optimizer steps, so each parameter's step count equals it (or, without
// `equal_steps`, does not exceed it), and a scheduler, stepped once per optimizer step or less
// often, has 0 <= last_epoch <= progress.step.
std::optional<std::string> inconsistency(
    const TrainingProgress& progress, const std::vector<optim::OptimizerState>& optimizers,
    const std::vector<std::optional<optim::LambdaLRState>>& schedulers, bool equal_steps) {
  std::ostringstream os;
  if (progress.step < 0 || progress.data_position < 0) {
    os << "expected progress.step and progress.data_position to be counts (>= 0), got "
       << progress.step << " and " << progress.data_position;
    return os.str();
  }
  for (std::size_t k = 0; k < optimizers.size(); ++k) {
    for (const auto& [id, s] : optimizers[k].state)
      if (s.step && (equal_steps ? *s.step != progress.step : *s.step > progress.step)) {
        os << "expected the step count of every parameter of optimizer " << k << " ("
           << optimizers[k].optimizer << ") to " << (equal_steps ? "equal" : "be at most")
           << " progress.step, " << progress.step << " (the optimizer steps the run took), got "
           << *s.step << " for parameter " << id;
        if (equal_steps)
          os << "; a run where some parameters miss a gradient at some steps calls "
                "require_equal_steps(false)";
        return os.str();
      }
    if (k < schedulers.size() && schedulers[k] &&
        (schedulers[k]->last_epoch < 0 || schedulers[k]->last_epoch > progress.step)) {
      os << "expected the scheduler of optimizer " << k << " to have taken between 0 and "
         << progress.step << " steps (progress.step: at most one per optimizer step), got "
         << "last_epoch " << schedulers[k]->last_epoch;
      return os.str();
    }
  }
  return std::nullopt;
}

// 1. The file is a training checkpoint whose names fit the tracked objects: tensors "model...."
// or "optim.{k}...." with k below the number of tracked optimizers, and the state of exactly the
// tracked generators.
void check_marker(const SafetensorsFile& file, const std::string& where) {
  if (file.metadata_value(kTrainingMarkerKey) != kTrainingMarker)
    invalid_checkpoint(where,
                       "expected a training checkpoint (__metadata__ \"tapegrad.checkpoint\": "
                       "\"training\"), got a file without that mark",
                       file.metadata_value("optimizer")
                           ? "; it holds an optimizer: use io::load_optimizer"
                           : "; a model's weights load with io::load");
}

void check_optimizer_names(const SafetensorsFile& file, std::size_t tracked,
                           const std::string& where) {
  const auto check_index = [&](const std::string& name) {
    if (!name.starts_with("optim.")) return;
    const std::string rest = name.substr(6);
    const auto k = parse_integer<std::size_t>(std::string_view(rest).substr(0, rest.find('.')));
    if (!k || rest.find('.') == std::string::npos)
      invalid_checkpoint(where, "expected a name 'optim.{k}...', got ", in_quotes(name));
    if (*k >= tracked)
      invalid_checkpoint(where, "expected state for ", tracked,
                         " optimizer(s), as this run tracks, got ", in_quotes(name), " (optimizer ",
                         *k, "); track the same optimizers as the run that saved it");
  };
  for (const std::string& name : names_under(file, "")) {
    if (!name.starts_with(kModelPrefix) && !name.starts_with("optim."))
      invalid_checkpoint(where, "expected tensors named 'model...' or 'optim.{k}...', got ",
                         in_quotes(name));
    check_index(name);
  }
  for (const auto& [key, value] : file.metadata()) check_index(key);
}

void check_generator_names(
    const SafetensorsFile& file,
    const std::vector<std::pair<std::string, std::shared_ptr<Generator>>>& generators,
    const std::string& where) {
  std::vector<std::string> saved;
  for (const auto& [key, value] : file.metadata())
    if (key.starts_with("generator.")) saved.push_back(key.substr(10));
  for (const auto& [name, generator] : generators)
    if (!file.metadata_value("generator." + name))
      invalid_checkpoint(where, "expected the state of generator ", in_quotes(name),
                         ", got none; the run that saved it tracked ", saved.size(),
                         " generator(s) (add_generator with the same names)");
  for (const std::string& name : saved)
    if (std::none_of(generators.begin(), generators.end(),
                     [&](const auto& g) { return g.first == name; }))
      invalid_checkpoint(
          where, "expected only the generators this run tracks, got the state of generator ",
          in_quotes(name), "; track it with add_generator(", in_quotes(name),
          ", ...) to resume exactly");
}

// 2. The values, read and checked into local copies (the helpers of TrainingCheckpoint::read_state).
std::vector<Generator> generator_states(
    const SafetensorsFile& file,
    const std::vector<std::pair<std::string, std::shared_ptr<Generator>>>& generators,
    const std::string& where) {
  std::vector<Generator> out;
  for (const auto& [name, generator] : generators) {
    Generator g;
    try {
      g.set_state(*file.metadata_value("generator." + name));
    } catch (const ValueError& e) {
      invalid_checkpoint(where, "expected the state of generator ", in_quotes(name),
                         ", got text it cannot use (", e.what(), ")");
    }
    out.push_back(g);
  }
  return out;
}

struct DropoutState {
  nn::Dropout* layer;
  std::uint64_t seed, calls;
  bool reseed;
};

// "{seed} {calls}" or "{seed} {calls} reseed", two unsigned decimal integers.
std::optional<DropoutState> parse_dropout(nn::Dropout* layer, std::string_view text) {
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto seed = parse_integer<std::uint64_t>(text.substr(0, space));
  const std::string_view rest = text.substr(space + 1);
  const std::size_t flag_at = std::min(rest.find(' '), rest.size());
  const auto calls = parse_integer<std::uint64_t>(rest.substr(0, flag_at));
  const std::string_view flag = rest.substr(std::min(flag_at + 1, rest.size()));
  if (!seed || !calls || (flag_at < rest.size() && flag != "reseed")) return std::nullopt;
  return DropoutState{layer, *seed, *calls, !flag.empty()};
}

std::vector<DropoutState> dropout_states(const SafetensorsFile& file, nn::Module& model,
                                         const std::string& where) {
  std::vector<DropoutState> out;
  for (const auto& [path, dropout] : dropouts_of(model)) {
    const std::string key = "dropout." + path;
    const auto text = file.metadata_value(key);
    if (!text)
      invalid_checkpoint(where, "expected __metadata__ ", in_quotes(key),
                         " (the seed and call count of Dropout ", in_quotes(path),
                         "), got none; the file was saved by a run with another model");
    const auto state = parse_dropout(dropout, *text);
    if (!state)
      invalid_checkpoint(
          where, "expected __metadata__ ", in_quotes(key),
          " to be \"{seed} {calls}\" (two unsigned integers, then optionally \"reseed\"), got ",
          in_quotes(*text));
    out.push_back(*state);
  }
  return out;
}

TrainingProgress progress_from(const SafetensorsFile& file, const std::string& where) {
  const auto counter = [&](const std::string& key) {
    const auto text = file.metadata_value(key);
    const auto value = text ? parse_integer<std::int64_t>(*text) : std::nullopt;
    if (!value)
      invalid_checkpoint(where, "expected __metadata__ ", in_quotes(key), " to be an integer, got ",
                         text ? in_quotes(*text) : "none");
    return *value;
  };
  TrainingProgress progress(counter("progress.step"), counter("progress.data_position"));
  for (const auto& [key, value] : file.metadata())
    if (key.starts_with("progress.extra.")) progress.extra.emplace(key.substr(15), value);
  return progress;
}

// A run's parameters are finite: NaN or Inf weights come from a diverged run (or an edit), and
// every step from them would be NaN. Buffers are not checked (a causal mask may hold -inf).
void check_finite_parameters(const nn::Module& model, const nn::StateDict& state,
                             const std::string& where) {
  for (const auto& [name, parameter] : model.named_parameters()) {
    const Array* values = state.find(name);
    if (values == nullptr) continue;  // reported by the state dict's own check
    const float* p = values->data();
    for (std::size_t i = 0, n = values->size(); i < n; ++i)
      if (!std::isfinite(p[i]))
        invalid_checkpoint(where, "expected the parameter ", in_quotes(name),
                           " to hold finite values, got ", p[i], " at position ",
                           position_str(i, values->shape()),
                           "; the run that saved it diverged, or the file was edited");
  }
}
}  // namespace

TrainingCheckpoint::TrainingCheckpoint(nn::Module& model) : model_(model) {
  generators_.emplace_back("default", default_generator());
}

TrainingCheckpoint::TrainingCheckpoint(nn::Module& model, optim::Optimizer& optimizer,
                                       optim::LambdaLR* scheduler)
    : TrainingCheckpoint(model) {
  add_optimizer(optimizer, scheduler);
}

TrainingCheckpoint& TrainingCheckpoint::add_optimizer(optim::Optimizer& optimizer,
                                                      optim::LambdaLR* scheduler) {
  for (const TrackedOptimizer& t : optimizers_) {
    check<ValueError>(t.optimizer != &optimizer,
                      "TrainingCheckpoint::add_optimizer: expected a new optimizer, got the ",
                      optimizer.type_name(), " already tracked");
    check<ValueError>(scheduler == nullptr || t.scheduler != scheduler,
                      "TrainingCheckpoint::add_optimizer: expected a new scheduler, got one "
                      "already tracked with another optimizer");
  }
  optimizers_.push_back({&optimizer, scheduler});
  return *this;
}

TrainingCheckpoint& TrainingCheckpoint::add_generator(const std::string& name,
                                                      std::shared_ptr<Generator> generator) {
  check<ValueError>(!name.empty(), "TrainingCheckpoint::add_generator: expected a non-empty name");
  check<ValueError>(generator != nullptr,
                    "TrainingCheckpoint::add_generator: expected a generator for ", in_quotes(name),
                    ", got a null pointer");
  for (const auto& [n, g] : generators_)
    check<ValueError>(
        n != name, "TrainingCheckpoint::add_generator: expected a new name, got ", in_quotes(name),
        name == "default" ? ", the name of the default generator, which is always tracked"
                          : ", which is already tracked");
  generators_.emplace_back(name, std::move(generator));
  return *this;
}

TrainingCheckpoint& TrainingCheckpoint::require_equal_steps(bool equal) {
  equal_steps_ = equal;
  return *this;
}

SafetensorsFile TrainingCheckpoint::to_file(const TrainingProgress& progress) const {
  std::vector<optim::OptimizerState> states;
  std::vector<std::optional<optim::LambdaLRState>> schedulers;
  for (const TrackedOptimizer& t : optimizers_) {
    states.push_back(t.optimizer->state_dict());
    schedulers.push_back(t.scheduler ? std::optional(t.scheduler->state_dict()) : std::nullopt);
  }
  if (const auto problem = inconsistency(progress, states, schedulers, equal_steps_))
    fail<ValueError>("TrainingCheckpoint::save: ", *problem, "; load would refuse the file");
  SafetensorsFile file;
  add_state_dict(file, model_.state_dict(), kModelPrefix);
  for (std::size_t k = 0; k < optimizers_.size(); ++k)
    add_optimizer_state(file, std::move(states[k]), schedulers[k] ? &*schedulers[k] : nullptr,
                        optimizer_prefix(k));
  for (const auto& [name, generator] : generators_)
    file.set_metadata("generator." + name, generator->state());
  for (const auto& [path, dropout] : dropouts_of(model_))
    file.set_metadata("dropout." + path, std::to_string(dropout->seed()) + " " +
                                             std::to_string(dropout->calls()) +
                                             (dropout->reseed_pending() ? " reseed" : ""));
  file.set_metadata("progress.step", std::to_string(progress.step));
  file.set_metadata("progress.data_position", std::to_string(progress.data_position));
  for (const auto& [key, value] : progress.extra) file.set_metadata("progress.extra." + key, value);
  file.set_metadata(kTrainingMarkerKey, kTrainingMarker);
  file.set_metadata("framework", "tapegrad");
  return file;
}

void TrainingCheckpoint::save(const std::string& path, const TrainingProgress& progress) const {
  save_safetensors(path, to_file(progress));
}

TrainingProgress TrainingCheckpoint::load(const std::string& path) {
  return restore(load_safetensors(path), path);
}

TrainingProgress TrainingCheckpoint::restore(const SafetensorsFile& file,
                                             const std::string& source) {
  return restore(SafetensorsFile(file), source);
}

// Everything a file holds for the tracked objects, read and checked; nothing tracked changed yet.
struct TrainingCheckpoint::Restored {
  nn::StateDict model;
  std::vector<optim::OptimizerState> optimizers;
  std::vector<std::optional<optim::LambdaLRState>> schedulers;
  std::vector<Generator> generators;
  std::vector<DropoutState> dropouts;
  TrainingProgress progress;
};

// The four steps of a load: the names, the values, their agreement, then the change.
TrainingProgress TrainingCheckpoint::restore(SafetensorsFile&& file, const std::string& source) {
  const std::string where = where_in("TrainingCheckpoint::load", source);
  check_marker(file, where);  // 1
  check_optimizer_names(file, optimizers_.size(), where);
  check_generator_names(file, generators_, where);
  Restored state = read_state(file, where);  // 2
  if (const auto problem =
          inconsistency(state.progress, state.optimizers, state.schedulers, equal_steps_))
    invalid_checkpoint(where, *problem);  // 3
  check_finite_parameters(model_, state.model, where);
  TrainingProgress progress = state.progress;
  apply(std::move(state), source);  // 4
  return progress;
}

TrainingCheckpoint::Restored TrainingCheckpoint::read_state(SafetensorsFile& file,
                                                            const std::string& where) const {
  Restored out;
  out.model = state_dict_from(file, &file, kModelPrefix, where, nullptr);
  for (std::size_t k = 0; k < optimizers_.size(); ++k) {
    const std::string prefix = optimizer_prefix(k);
    out.optimizers.push_back(optimizer_state_from(file, &file, prefix, where));
    out.schedulers.push_back(lambda_lr_state_from(file, prefix, where));
    const bool tracked = optimizers_[k].scheduler != nullptr,
               saved = out.schedulers.back().has_value();
    if (tracked != saved)
      invalid_checkpoint(where, "expected ", tracked ? "a" : "no",
                         " scheduler state for optimizer ", k, " (",
                         optimizers_[k].optimizer->type_name(), "), as this run tracks, got ",
                         saved ? "one" : "none");
  }
  out.generators = generator_states(file, generators_, where);
  out.dropouts = dropout_states(file, model_, where);
  out.progress = progress_from(file, where);
  return out;
}

// All or nothing, without copying what was read. The model's state and every optimizer's are
// checked first (check_state_dict), model first so that a file of another model is reported by
// its keys and shapes. Then the schedulers load (a few numbers each, snapshotted to be put back
// if a later one refuses), the model (checked), and the optimizers take their checked moments by
// move. So nothing is snapshotted but the schedulers, and a load's memory stays near the size of
// the file. Generators and Dropout streams come last, when nothing can fail any more.
void TrainingCheckpoint::apply(Restored&& state, const std::string& source) {
  try {
    model_.check_state_dict(state.model, /*strict=*/true);
  } catch (const StateDictError& e) {  // PyTorch's text, then which file it was
    throw StateDictError(std::string(e.what()) + "\n\tcheckpoint: " + in_quotes(source), e.missing,
                         e.unexpected, e.mismatches);
  }
  for (std::size_t k = 0; k < optimizers_.size(); ++k)
    optimizers_[k].optimizer->check_state_dict(state.optimizers[k]);
  std::vector<std::optional<optim::LambdaLRState>> schedulers_before;
  try {
    for (std::size_t k = 0; k < optimizers_.size(); ++k) {
      const TrackedOptimizer& t = optimizers_[k];
      schedulers_before.push_back(t.scheduler ? std::optional(t.scheduler->state_dict())
                                              : std::nullopt);
      if (t.scheduler != nullptr) t.scheduler->load_state_dict(*state.schedulers[k]);  // atomic
    }
    model_.load_state_dict(state.model, /*strict=*/true);  // checked above; atomic by itself
  } catch (...) {
    for (std::size_t k = 0; k < schedulers_before.size(); ++k)
      if (schedulers_before[k]) optimizers_[k].scheduler->load_state_dict(*schedulers_before[k]);
    throw;
  }
  state.model = nn::StateDict();
  for (std::size_t k = 0; k < optimizers_.size(); ++k) {
    optimizers_[k].optimizer->load_state_dict(std::move(state.optimizers[k]));  // checked above
    state.optimizers[k] = optim::OptimizerState();
  }
  for (std::size_t i = 0; i < generators_.size(); ++i) *generators_[i].second = state.generators[i];
  for (const DropoutState& d : state.dropouts) d.layer->set_stream_state(d.seed, d.calls, d.reseed);
}

}  // namespace tapegrad::io
