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

#include <functional>
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

nn::IncompatibleKeys load(nn::Module& module, const std::string& path, bool strict) {
  SafetensorsFile file = load_safetensors(path);
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
  const nn::StateDict sd = state_dict_from(file, &file, prefix, where, is_module_key);
  try {
    return module.load_state_dict(sd, strict);
  } catch (const StateDictError& e) {  // PyTorch's text, then which file it was
    throw StateDictError(std::string(e.what()) + "\n\tcheckpoint: " + in_quotes(path), e.missing,
                         e.unexpected, e.mismatches);
  }
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

SafetensorsFile TrainingCheckpoint::to_file(const TrainingProgress& progress) const {
  SafetensorsFile file;
  add_state_dict(file, model_.state_dict(), kModelPrefix);
  for (std::size_t k = 0; k < optimizers_.size(); ++k) {
    std::optional<optim::LambdaLRState> s;
    if (optimizers_[k].scheduler != nullptr) s = optimizers_[k].scheduler->state_dict();
    add_optimizer_state(file, optimizers_[k].optimizer->state_dict(), s ? &*s : nullptr,
                        optimizer_prefix(k));
  }
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

TrainingProgress TrainingCheckpoint::restore(SafetensorsFile&& file, const std::string& source) {
  const std::string where = where_in("TrainingCheckpoint::load", source);

  // 1. The layout: a training checkpoint of exactly the tracked optimizers and generators.
  if (file.metadata_value(kTrainingMarkerKey) != kTrainingMarker)
    invalid_checkpoint(where,
                       "expected a training checkpoint (__metadata__ \"tapegrad.checkpoint\": "
                       "\"training\"), got a file without that mark",
                       file.metadata_value("optimizer")
                           ? "; it holds an optimizer: use io::load_optimizer"
                           : "; a model's weights load with io::load");
  const auto optimizer_index = [&](const std::string& name) -> std::optional<std::size_t> {
    if (!name.starts_with("optim.")) return std::nullopt;
    const std::string rest = name.substr(6);
    const auto k = parse_integer<std::size_t>(std::string_view(rest).substr(0, rest.find('.')));
    if (!k || rest.find('.') == std::string::npos)
      invalid_checkpoint(where, "expected a name 'optim.{k}...', got ", in_quotes(name));
    return k;
  };
  const auto check_optimizer_index = [&](const std::string& name) {
    if (const auto k = optimizer_index(name); k && *k >= optimizers_.size())
      invalid_checkpoint(where, "expected state for ", optimizers_.size(),
                         " optimizer(s), as this run tracks, got ", in_quotes(name), " (optimizer ",
                         *k, "); track the same optimizers as the run that saved it");
  };
  for (const std::string& name : names_under(file, "")) {
    if (name.starts_with(kModelPrefix)) continue;
    if (!name.starts_with("optim."))
      invalid_checkpoint(where, "expected tensors named 'model...' or 'optim.{k}...', got ",
                         in_quotes(name));
    check_optimizer_index(name);
  }
  std::vector<std::string> saved_generators;
  for (const auto& [key, value] : file.metadata()) {
    check_optimizer_index(key);
    if (key.starts_with("generator.")) saved_generators.push_back(key.substr(10));
  }
  for (const auto& [name, generator] : generators_)
    if (!file.metadata_value("generator." + name))
      invalid_checkpoint(where, "expected the state of generator ", in_quotes(name),
                         ", got none; the run that saved it tracked ", saved_generators.size(),
                         " generator(s) (add_generator with the same names)");
  if (saved_generators.size() != generators_.size())
    for (const std::string& name : saved_generators)
      if (std::none_of(generators_.begin(), generators_.end(),
                       [&](const auto& g) { return g.first == name; }))
        invalid_checkpoint(
            where, "expected only the generators this run tracks, got the state of generator ",
            in_quotes(name), "; track it with add_generator(", in_quotes(name),
            ", ...) to resume exactly");

  // 2. Everything read and checked into local values; nothing tracked has changed yet.
  nn::StateDict model_state = state_dict_from(file, &file, kModelPrefix, where, nullptr);
  std::vector<optim::OptimizerState> optimizer_states;
  std::vector<std::optional<optim::LambdaLRState>> scheduler_states;
  for (std::size_t k = 0; k < optimizers_.size(); ++k) {
    const std::string prefix = optimizer_prefix(k);
    optimizer_states.push_back(optimizer_state_from(file, &file, prefix, where));
    scheduler_states.push_back(lambda_lr_state_from(file, prefix, where));
    const bool tracked = optimizers_[k].scheduler != nullptr,
               saved = scheduler_states.back().has_value();
    if (tracked != saved)
      invalid_checkpoint(where, "expected ", tracked ? "a" : "no",
                         " scheduler state for optimizer ", k, " (",
                         optimizers_[k].optimizer->type_name(), "), as this run tracks, got ",
                         saved ? "one" : "none");
  }
  std::vector<Generator> generator_states;
  for (const auto& [name, generator] : generators_) {
    Generator g;
    try {
      g.set_state(*file.metadata_value("generator." + name));
    } catch (const ValueError& e) {
      invalid_checkpoint(where, "expected the state of generator ", in_quotes(name),
                         ", got text it cannot use (", e.what(), ")");
    }
    generator_states.push_back(g);
  }
  struct DropoutState {
    nn::Dropout* layer;
    std::uint64_t seed, calls;
    bool reseed;
  };
  std::vector<DropoutState> dropout_states;
  for (const auto& [path, dropout] : dropouts_of(model_)) {
    const std::string key = "dropout." + path;
    const auto text = file.metadata_value(key);
    if (!text)
      invalid_checkpoint(where, "expected __metadata__ ", in_quotes(key),
                         " (the seed and call count of Dropout ", in_quotes(path),
                         "), got none; the file was saved by a run with another model");
    const auto space = text->find(' ');
    const auto seed = parse_integer<std::uint64_t>(
        std::string_view(*text).substr(0, std::min(space, text->size())));
    const std::string rest = space == std::string::npos ? "" : text->substr(space + 1);
    const std::string calls_text = rest.substr(0, rest.find(' '));
    const auto calls = parse_integer<std::uint64_t>(calls_text);
    const std::string flag =
        rest.find(' ') == std::string::npos ? "" : rest.substr(rest.find(' ') + 1);
    if (!seed || !calls || !(flag.empty() || flag == "reseed"))
      invalid_checkpoint(
          where, "expected __metadata__ ", in_quotes(key),
          " to be \"{seed} {calls}\" (two unsigned integers, then optionally \"reseed\"), got ",
          in_quotes(*text));
    dropout_states.push_back({dropout, *seed, *calls, flag == "reseed"});
  }
  TrainingProgress progress;
  const auto counter = [&](const std::string& key) {
    const auto text = file.metadata_value(key);
    const auto value = text ? parse_integer<std::int64_t>(*text) : std::nullopt;
    if (!value)
      invalid_checkpoint(where, "expected __metadata__ ", in_quotes(key), " to be an integer, got ",
                         text ? in_quotes(*text) : "none");
    return *value;
  };
  progress.step = counter("progress.step");
  progress.data_position = counter("progress.data_position");
  for (const auto& [key, value] : file.metadata())
    if (key.starts_with("progress.extra.")) progress.extra.emplace(key.substr(15), value);

  // 3. Apply, all or nothing, without copying what was read. The model's state and every
  //    optimizer's are checked first (check_state_dict), model first so that a file of another
  //    model is reported by its keys and shapes. Then the schedulers load (a few numbers each,
  //    snapshotted to be put back if a later one refuses), the model (checked), and the
  //    optimizers take their checked moments by move. So nothing is snapshotted but the
  //    schedulers, and a load's memory stays near the size of the file.
  try {
    model_.check_state_dict(model_state, /*strict=*/true);
  } catch (const StateDictError& e) {  // PyTorch's text, then which file it was
    throw StateDictError(std::string(e.what()) + "\n\tcheckpoint: " + in_quotes(source), e.missing,
                         e.unexpected, e.mismatches);
  }
  for (std::size_t k = 0; k < optimizers_.size(); ++k)
    optimizers_[k].optimizer->check_state_dict(optimizer_states[k]);
  std::vector<std::optional<optim::LambdaLRState>> schedulers_before;
  try {
    for (std::size_t k = 0; k < optimizers_.size(); ++k) {
      const TrackedOptimizer& t = optimizers_[k];
      if (t.scheduler == nullptr) {
        schedulers_before.emplace_back();
        continue;
      }
      schedulers_before.push_back(t.scheduler->state_dict());
      t.scheduler->load_state_dict(*scheduler_states[k]);  // atomic by itself
    }
    model_.load_state_dict(model_state, /*strict=*/true);  // checked above; atomic by itself
  } catch (...) {
    for (std::size_t k = 0; k < schedulers_before.size(); ++k)
      if (schedulers_before[k]) optimizers_[k].scheduler->load_state_dict(*schedulers_before[k]);
    throw;
  }
  model_state = nn::StateDict();
  for (std::size_t k = 0; k < optimizers_.size(); ++k) {
    optimizers_[k].optimizer->load_state_dict(std::move(optimizer_states[k]));  // checked above
    optimizer_states[k] = optim::OptimizerState();
  }
  for (std::size_t i = 0; i < generators_.size(); ++i) *generators_[i].second = generator_states[i];
  for (const DropoutState& d : dropout_states)
    d.layer->set_stream_state(d.seed, d.calls, d.reseed);  // after
  return progress;
}

}  // namespace tapegrad::io
