// include/tapegrad/train/trainer.hpp
//
// The training loop, for any Module: what nanoGPT's train.py, Lightning's Trainer and Hugging
// Face's Trainer do, in one class a learner reuses instead of copying. The learner supplies the
// model, its optimizer (and schedule), a loss on a batch, and the batches; the trainer runs the
// steps and everything around them:
//
//     train::Trainer trainer(model, optimizer, &schedule,
//                            train::TrainerOptions().steps(2000).eval_every(250).out("run"));
//     trainer.track("model", model_generator);        // every random stream the run draws from
//     train::Run run = trainer.fit(task, batches, validation);
//
// One step, in order (Trainer::step; docs/training.md walks through it line by line):
//   1. draw the step's grad_accum batches from `batches` (all of them first: a batch that cannot
//      be read stops the run before the step has changed anything);
//   2. for each: the loss (under autocast::bf16 with bf16()), backward of loss / grad_accum (under
//      several ranks, the gradients are averaged across them in the last backward only);
//   3. clip the gradients' norm (clip() > 0), the optimizer's step, zero_grad, the schedule's step;
//   4. every eval_every steps (and at the last): the loss on the fixed validation batches, in
//      nats per target and in bits per byte when the data knows its bytes; then the checkpoints.
//
// Checkpoints (out() not empty): OUT/last.safetensors after every validation, and
// OUT/best.safetensors when the validation loss is lower than the one it holds, from this run or
// an earlier one in the folder (a run never replaces a better model). Each holds the model, the
// optimizer and schedule, every tracked generator, the position of the batches, the run's loss
// history and the notes the caller describes the model with; --resume (resume()) continues from
// last.safetensors to the same bits as a run that was never stopped. Every file is written
// atomically; the folder is locked for the run (a second run on it is refused at once).
//
// Stopping early: a first SIGINT or SIGTERM (Ctrl-C; train::StopSignals, which a Session
// installs) finishes the current step, saves last.safetensors and returns with run.stopped_by
// set; the program then exits 128 + the signal. A batch that cannot be read (a token file that
// shrank under the run: DataError) saves last.safetensors with the state before the failed step
// and rethrows. Under mpirun every rank stops at the same step.
//
// Ranks: when the program was started by mpirun (train::Session), every rank trains its own
// batches and DistributedDataParallel averages the gradients; rank 0 alone validates, prints and
// writes the checkpoints. The checkpoint holds nothing about the number of ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/core/options.hpp"
#include "tapegrad/core/random.hpp"
#include "tapegrad/core/tensor.hpp"
#include "tapegrad/data/windows.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/optim/lr_scheduler.hpp"
#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::train {

class RunFolder;

/// Where a run's training batches come from: next() is called grad_accum times per step. What a
/// resumed run needs to read the same batches is saved with every checkpoint: the generators the
/// source draws from (generators(), tracked by name) and its position() (e.g. batches read).
class Batches {
 public:
  virtual ~Batches() = default;
  /// This rank's next batch: x and y of the same shape (B, T); y holds the targets.
  virtual data::Batch next() = 0;
  /// Generators whose states are the source's position, saved and restored by name.
  virtual std::vector<std::pair<std::string, std::shared_ptr<Generator>>> generators() const {
    return {};
  }
  /// A position of the source's own (nullopt: none; the checkpoint then stores the step).
  virtual std::optional<std::int64_t> position() const { return std::nullopt; }
  virtual void set_position(std::int64_t) {}
};

/// What the trainer computes on a batch.
struct Task {
  /// The mean loss of a training batch, in training mode; the trainer calls backward on it.
  std::function<Tensor(const data::Batch&)> loss;
  /// The SUM of the losses of a validation batch's targets (eval mode, nothing recorded); the
  /// trainer divides by the targets counted (those of y not equal to ignore_index). When null,
  /// loss(batch) times that count.
  std::function<double(const data::Batch&)> loss_sum = nullptr;
};

/// The fixed batches a run validates on, before the first step and every eval_every steps.
struct Validation {
  std::vector<data::Batch> batches;
  /// Targets equal to it are not scored (a language model's <unk>, or PyTorch's -100).
  std::int64_t ignore_index = -100;
  /// The classes a target is one of (a vocabulary's size), or 0: the line before training then
  /// shows ln(num_classes), the loss of a uniform guess, beside the loss.
  std::int64_t num_classes = 0;
  /// The bytes of text a target token stands for, when the data knows them: the validation loss
  /// is then also given in bits per byte, comparable across tokenizers. Null: nats only.
  std::function<std::size_t(std::int64_t)> bytes_of = nullptr;
};

struct TrainerOptions {
  /// Optimizer steps in all (the schedule decays over them).
  TAPEGRAD_ARG(std::int64_t, steps) = 1000;
  /// Batches per step: the step's gradient is their mean.
  TAPEGRAD_ARG(std::int64_t, grad_accum) = 1;
  /// The gradients' total norm is clipped to it (clip_grad_norm_); 0: no clipping.
  TAPEGRAD_ARG(double, clip) = 1.0;
  /// Steps between validations and checkpoints (and always after the last step).
  TAPEGRAD_ARG(std::int64_t, eval_every) = 250;
  /// Stop after this step (a checkpoint is saved), to resume later; 0: run to steps().
  TAPEGRAD_ARG(std::int64_t, stop_after) = 0;
  /// The run's folder (last.safetensors, best.safetensors, the loss data and picture); "": no
  /// files at all.
  TAPEGRAD_ARG(std::string, out) = "";
  /// Continue from OUT/last.safetensors (a new run when there is none, with a note saying so).
  TAPEGRAD_ARG(bool, resume) = false;
  /// The products in bfloat16 (autocast::bf16) in training steps; validation stays float32.
  TAPEGRAD_ARG(bool, bf16) = false;
  /// Activation recompute: the trainer turns the model's recompute(true) on (a CausalLM: the GPT,
  /// LlamaForCausalLM), whose blocks then keep their inputs instead of their activations and run
  /// again in backward; the same bits, less memory, more time. Another model is refused.
  TAPEGRAD_ARG(bool, recompute) = false;
  /// Print the profiler's table of this many steps, taken after up to 10 warm-up steps.
  TAPEGRAD_ARG(std::int64_t, profile) = 0;
  /// No progress lines (validations and the end are still reported).
  TAPEGRAD_ARG(bool, quiet) = false;
  /// Under mpirun: check after every backward that every rank holds the same bits (slower).
  TAPEGRAD_ARG(bool, check_in_sync) = false;
  /// Draw OUT/loss.png with gnuplot at the end (when gnuplot is installed).
  TAPEGRAD_ARG(bool, pictures) = true;
  /// How the run names itself in what it prints on a signal ("gpt"; under mpirun the rank and
  /// the process id are added).
  TAPEGRAD_ARG(std::string, program) = "train";
};

/// What a run did, and what its checkpoints record.
struct Run {
  std::int64_t step = 0;                                    ///< steps done (resumed ones included)
  std::vector<float> train_losses;                          ///< one per step, from step 1
  std::vector<std::pair<std::int64_t, float>> val_history;  ///< (step, loss), from step 0
  double best_val = INFINITY;       ///< the validation loss best.safetensors holds
  double val_bits_per_byte = NAN;   ///< at the last validation (NaN without bytes_of)
  std::vector<float> step_seconds;  ///< this process's steps (not the resumed ones)
  double train_seconds = 0.0;       ///< the sum of step_seconds: steps only, no validation or save
  int stopped_by = 0;            ///< the signal that stopped the run early (SIGINT, SIGTERM), or 0
  std::int64_t saved_step = -1;  ///< the step OUT/last.safetensors holds, when this run knows it
  std::vector<std::string> pictures;      ///< the pictures drawn in OUT (paths)
  double exposed_communication_ms = 0.0;  ///< under mpirun: what backward waited for, per step

  /// The median step time in seconds, the first 10 steps (warming the caches) left out when
  /// there are more.
  double median_step_seconds() const;
};

class Trainer {
 public:
  /// The objects are held by reference and must outlive the trainer. `schedule` may be null.
  /// ValueError for options out of range (steps < 1, grad_accum < 1, ...), naming the option.
  Trainer(nn::Module& model, optim::Optimizer& optimizer, optim::LambdaLR* schedule,
          TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Tracks a generator the model draws from (its initialisation and dropout: "model"), saved
  /// and restored by name. The batches' generators are tracked through Batches::generators().
  Trainer& track(const std::string& name, std::shared_ptr<Generator> generator);
  /// How a resumed run reads a note of the checkpoint it continues: the note's text, or for a
  /// note the file lacks, the value its writer meant by leaving it out (notes added to a format
  /// later); CheckpointError when there is none.
  using NoteReader = std::function<std::string(const io::SafetensorsFile& file,
                                               const std::string& key, const std::string& path)>;
  /// Text that describes the model (its sizes and parts by name, its tokenizer), written into
  /// every checkpoint; on resume, each must equal the checkpoint's (as `read` reads it: by
  /// default, the note itself), else the run is refused naming the note (it was made with
  /// another model).
  Trainer& notes(std::map<std::string, std::string> notes, NoteReader read = nullptr);
  /// Called once every rank holds its starting state (after a resume), before the first
  /// validation: a program's description of the run (Run::step says where it resumed).
  Trainer& on_start(std::function<void(const Run&)> callback);

  /// The run's folder, opened (checked and locked) by the caller before a long preparation
  /// (reading a corpus), so that a folder another run holds is refused before that work; without
  /// one, fit() opens options().out() itself.
  void use_folder(std::unique_ptr<RunFolder> folder);

  /// Trains to options().steps() (or stop_after(), or a stop signal). Validates before the first
  /// step of a new run. Returns the run's record; Run::stopped_by says whether a signal ended it.
  /// A batch that cannot be read, or a validation that fails on its data (DataError), saves the
  /// last whole step and rethrows. Under mpirun an error on one rank stops every rank.
  Run fit(const Task& task, Batches& batches, const Validation& validation);

  const TrainerOptions& options() const { return options_; }
  /// This process's rank and the number of ranks (0 and 1 without mpirun).
  int rank() const { return rank_; }
  int world() const { return world_; }

  /// The mean validation loss of `validation` under `task`, in nats per scored target and bits
  /// per byte (NaN without bytes_of), eval mode, nothing recorded; the model is left in training
  /// mode. Both NaN when no target is scored (no validation batches): such a run still saves
  /// last.safetensors, and never a best.
  static std::pair<double, double> validation_loss(nn::Module& model, const Task& task,
                                                   const Validation& validation);

 private:
  struct Impl;  // trainer.cpp: the run's parts, in the order fit() calls them
  std::unique_ptr<Impl> impl_;
  TrainerOptions options_;
  int rank_ = 0, world_ = 1;
};

}  // namespace tapegrad::train
