// include/tapegrad/io/checkpoint.hpp
//
// Saving and resuming training, in safetensors files, at three levels:
//
//     io::save(model, "model.safetensors");                  // the weights, PyTorch's state_dict keys
//     io::load(model, "model.safetensors");                  // strict by default
//     io::save_optimizer(opt, "optim.safetensors", &sched);  // moments, step counts, hyper-parameters
//     io::load_optimizer(opt, "optim.safetensors", &sched);
//
//     io::TrainingCheckpoint ckpt(model, opt, &sched);       // all a run needs to resume EXACTLY:
//     ckpt.add_generator("data", data_gen);                  // model, optimizer, scheduler, generators
//     std::int64_t step = resuming ? ckpt.load("run.safetensors").step : 0;
//     for (; step < steps; ++step) { ...one step...; ckpt.save("run.safetensors", {step + 1}); }
//
// Every save replaces its file atomically: a crash at any moment leaves the old file or the new
// one, whole; each tensor's CRC-32C goes into the file's metadata. Every load reads and checks the
// whole file (its checksums included), then everything it would change, before changing
// anything: a refused file (CheckpointError, StateDictError, TypeError, ValueError) leaves the
// model, optimizers, schedulers and generators exactly as they were, and the file untouched.
// Memory: a save streams the tensors to the file from one copy of the state (the state dict it
// takes), a load reads them straight into the arrays it hands on; neither holds a second copy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/optim/lr_scheduler.hpp"
#include "tapegrad/optim/optimizer.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::io {

// ---- a model's weights ---------------------------------------------------------------------------

/// Writes module.state_dict(): parameters and persistent buffers as F32 under PyTorch's keys, a
/// tied parameter once (its other names in __metadata__, as safetensors' save_model does), and
/// metadata "format": "pt", "framework": "tapegrad", "tapegrad.version". Replaces `path` atomically.
/// In Python: safetensors.torch.load_file(path), or load_model(model, path) when weights are tied.
void save(const nn::Module& module, const std::string& path);

/// Loads a file written by save() (or by PyTorch's safetensors) through module.load_state_dict:
/// F32 as stored, F64/F16/BF16 converted to float32; another dtype for one of the module's keys is
/// a TypeError naming key and dtype. A damaged file is a CheckpointError, keys or shapes that do
/// not fit a StateDictError (PyTorch's text); either way the module is unchanged. With strict =
/// false, missing and unexpected keys are returned instead. A TrainingCheckpoint file is accepted
/// too: its "model." part is loaded. Values are loaded as they are, NaN and Inf included (an F64
/// beyond float's range becomes Inf); TrainingCheckpoint::load refuses non-finite parameters.
nn::IncompatibleKeys load(nn::Module& module, const std::string& path, bool strict = true);
/// load() from a file already read (load_safetensors(path)), for a caller that read it for its
/// metadata first: the same checks and messages, without reading it twice.
nn::IncompatibleKeys load(nn::Module& module, const SafetensorsFile& file, const std::string& path,
                          bool strict = true);

/// The tensors of a model file as a StateDict (float32, ties restored as aliases), e.g. to compare
/// with nn::diff_state_dicts(model.state_dict(), io::load_state_dict(path)).
nn::StateDict load_state_dict(const std::string& path);

// ---- an optimizer's state ------------------------------------------------------------------------

/// Writes optimizer.state_dict(): tensors "state.{id}.step" (I64, shape ()) and
/// "state.{id}.exp_avg" ... (F32); __metadata__ "optimizer" (its type), "param_groups" (JSON text)
/// and, when a scheduler is given, "lr_scheduler" (its state as JSON text). Atomic.
void save_optimizer(const optim::Optimizer& optimizer, const std::string& path,
                    const optim::LambdaLR* scheduler = nullptr);
/// Loads a file written by save_optimizer into `optimizer` (and `scheduler`, which then requires
/// the file to hold one; without a scheduler, one in the file is ignored). Checks everything first
/// (CheckpointError for the file, ValueError when the state does not fit); on failure neither changes.
void load_optimizer(optim::Optimizer& optimizer, const std::string& path,
                    optim::LambdaLR* scheduler = nullptr);

// ---- everything for an exact resume, in one file ------------------------------------------------

/// Where a run stands, saved with a TrainingCheckpoint. `step` and `data_position` are the caller's
/// counters (steps completed; e.g. batches drawn, or an offset into a dataset); `extra` holds any
/// other text the run wants back (a first loss, a config hash).
struct TrainingProgress {
  /// ckpt.save(path, {step}) or ckpt.save(path, {step, batches_drawn, {{"first_loss", "2.41"}}}).
  TrainingProgress(std::int64_t steps_done = 0, std::int64_t position = 0,
                   std::map<std::string, std::string> notes = {})
      : step(steps_done), data_position(position), extra(std::move(notes)) {}
  std::int64_t step;
  std::int64_t data_position;
  std::map<std::string, std::string> extra;
};

/// The state of a training run — model, optimizers, their schedulers, random generators and
/// progress — saved to ONE safetensors file, atomically, and loaded back all or nothing. Training
/// N steps, saving, then loading into freshly built objects and training M more steps gives
/// bit-identical weights to N + M steps in one go, dropout masks and data order included, provided
/// every generator the run draws from is tracked. The default generator always is, as "default";
/// add the others (a data generator, a model's own generator) with add_generator. Each Dropout
/// layer of the model is saved too: its mask stream is two numbers, the seed it took from its
/// generator and how many training forwards it has made (nn/dropout.hpp).
///
/// The file: tensors "model.{key}" (the model's state dict), "optim.{k}.state.{id}.{name}"
/// (optimizer k's state, add_optimizer_state's layout under a prefix); __metadata__ "tapegrad.checkpoint":
/// "training", "optim.{k}.optimizer", "optim.{k}.param_groups", "optim.{k}.lr_scheduler",
/// "generator.{name}" (Generator::state() text), "dropout.{path}" ("{seed} {calls}", then
/// " reseed" when its generator was reseeded since it took the seed), "progress.step", "progress.data_position",
/// "progress.extra.{key}". It opens with NumPy like any safetensors file.
///
/// The objects are held by reference and must outlive the checkpoint object.
class TrainingCheckpoint {
 public:
  /// Tracks `model` and the default generator.
  explicit TrainingCheckpoint(nn::Module& model);
  /// Also tracks `optimizer` and the scheduler driving it, if any (the common single-optimizer run).
  TrainingCheckpoint(nn::Module& model, optim::Optimizer& optimizer,
                     optim::LambdaLR* scheduler = nullptr);

  /// Tracks one more optimizer (optimizer k, in the order added), e.g. SparseAdam for a sparse
  /// embedding next to Adam for the rest; `scheduler` is the LambdaLR driving it, or null.
  TrainingCheckpoint& add_optimizer(optim::Optimizer& optimizer,
                                    optim::LambdaLR* scheduler = nullptr);
  /// Tracks a generator under `name` (non-empty, unique; "default" is taken by the default generator).
  TrainingCheckpoint& add_generator(const std::string& name, std::shared_ptr<Generator> generator);
  /// Whether every parameter's step count must EQUAL progress.step (the default: each step updates
  /// every parameter), or only not exceed it. Turn it off for a run where some parameters miss a
  /// gradient at some steps (an optimizer skips a parameter without one, as PyTorch's does, so its
  /// count falls behind).
  TrainingCheckpoint& require_equal_steps(bool equal);

  /// Writes the tracked state and `progress` to `path`, replacing it atomically. `progress.step`
  /// is the number of optimizer steps taken: ValueError, nothing written, when it or
  /// data_position is negative, or when it disagrees with the optimizers' step counts or exceeds
  /// a scheduler's (see load), since load would refuse the file.
  void save(const std::string& path, const TrainingProgress& progress = {}) const;
  /// Restores the tracked state from `path` and returns the saved progress. The file must hold
  /// exactly the tracked optimizers (with a scheduler where one is tracked) and generators, and the
  /// model's keys (strict). Its values must agree with one another: progress.step and
  /// data_position >= 0; every parameter's step count equal to progress.step (see
  /// require_equal_steps); each scheduler's last_epoch in [0, progress.step] (it steps once per
  /// optimizer step, or less often); every model parameter finite (buffers may hold anything,
  /// -inf masks included). All or nothing: on any error nothing tracked has changed.
  TrainingProgress load(const std::string& path);

  /// The file's contents as save() would write them (for tests and custom storage).
  SafetensorsFile to_file(const TrainingProgress& progress = {}) const;
  /// load() from a file already read; `source` names it in messages. The rvalue form moves the
  /// tensors out of `file` instead of copying them (what load() does: its memory stays near the
  /// file's size).
  TrainingProgress restore(const SafetensorsFile& file, const std::string& source = "<memory>");
  TrainingProgress restore(SafetensorsFile&& file, const std::string& source = "<memory>");

 private:
  struct TrackedOptimizer {
    optim::Optimizer* optimizer;
    optim::LambdaLR* scheduler;
  };
  struct Restored;  // what restore() read from a file, checked, not yet applied
  Restored read_state(SafetensorsFile& file, const std::string& where) const;
  void apply(Restored&& state, const std::string& source);

  nn::Module& model_;
  std::vector<TrackedOptimizer> optimizers_;
  std::vector<std::pair<std::string, std::shared_ptr<Generator>>> generators_;
  bool equal_steps_ = true;
};

// ---- building blocks (what the functions above are made of) ------------------------------------

/// Adds a state dict's tensors under `prefix` + key: each tied group once, as tensor and aliases.
/// The arrays are moved into the file: pass a temporary (module.state_dict()) or std::move.
void add_state_dict(SafetensorsFile& file, nn::StateDict state, const std::string& prefix = "");
/// The tensors and aliases of `file` named `prefix` + key, as a StateDict keyed by key, converted
/// to float32 (F32, F64, F16, BF16; another dtype is a TypeError naming key and dtype).
nn::StateDict read_state_dict(const SafetensorsFile& file, const std::string& prefix = "");

/// Adds an optimizer's state: tensors `prefix` + "state.{id}.{name}" ("step" as I64 of shape (),
/// the others F32), metadata `prefix` + "optimizer" (the type name), "param_groups" and, when
/// given, "lr_scheduler" (JSON texts). The arrays are moved into the file, as add_state_dict.
void add_optimizer_state(SafetensorsFile& file, optim::OptimizerState state,
                         const optim::LambdaLRState* scheduler = nullptr,
                         const std::string& prefix = "");
/// Reads what add_optimizer_state wrote; CheckpointError (kind "InvalidCheckpoint") for a file
/// that does not hold it, naming `source`, or that holds values no run can produce: a step count
/// that is negative or not a whole number, a moment (exp_avg, momentum_buffer) with a non-finite
/// element, a second moment (exp_avg_sq, max_exp_avg_sq) with a negative or non-finite element.
/// A step may also be stored as an integral F32/F64 (PyTorch keeps it as a float tensor).
optim::OptimizerState read_optimizer_state(const SafetensorsFile& file,
                                           const std::string& prefix = "",
                                           const std::string& source = "<memory>");
/// The scheduler state of add_optimizer_state, or nullopt when the file holds none.
std::optional<optim::LambdaLRState> read_lambda_lr_state(const SafetensorsFile& file,
                                                         const std::string& prefix = "",
                                                         const std::string& source = "<memory>");

}  // namespace tapegrad::io
