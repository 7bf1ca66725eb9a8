// src/train/trainer.cpp: the training loop (train/trainer.hpp). Read fit() first: it is the run
// from start to end, one named part after another; step() is one optimizer step.
#include "tapegrad/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iomanip>
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include <unistd.h>

#include "flag_errors.hpp"
#include "history.hpp"
#include "tapegrad/autograd/grad_mode.hpp"
#include "tapegrad/autograd/profiler.hpp"
#include "tapegrad/core/autocast.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/io/checkpoint.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/ops/elementwise.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tapegrad/train/pictures.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/run_folder.hpp"
#include "tapegrad/train/stop_signals.hpp"
#include "tapegrad/transformer/causal_lm.hpp"
#ifdef TAPEGRAD_TRAIN_MPI
#include "tapegrad/distributed/collectives.hpp"
#include "tapegrad/distributed/data_parallel.hpp"
#include "tapegrad/distributed/process_group.hpp"
#endif

namespace tapegrad::train {

namespace fs = std::filesystem;

double Run::median_step_seconds() const {
  const std::size_t skipped = step_seconds.size() > 10 ? 10 : 0;
  std::vector<float> sorted(step_seconds.begin() + std::ptrdiff_t(skipped), step_seconds.end());
  if (sorted.empty()) return 0.0;
  std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(sorted.size() / 2),
                   sorted.end());
  return sorted[sorted.size() / 2];
}

// Why a run stops before its last step: a signal (Ctrl-C: SIGINT, or SIGTERM), or its data failing
// (a token file that shrank or changed under it), on this rank or another.
struct Halt {
  int signal = 0;            // SIGINT or SIGTERM, or 0
  bool data_failed = false;  // on some rank
  std::exception_ptr error;  // this rank's DataError (null when it was another rank's)
  bool agreed = true;        // every rank halts at this step
  explicit operator bool() const { return signal != 0 || data_failed; }
};

// The run's parts, each a method, in the order fit() calls them.
struct Trainer::Impl {
  Impl(nn::Module& m, optim::Optimizer& o, optim::LambdaLR* s)
      : model(m), optimizer(o), schedule(s), checkpoint(m, o, s) {}

  void start_data_parallel(const TrainerOptions& o, int rank, int world);
  Halt train_steps(const Task& task, Batches& batches, const Validation& validation, Run& run,
                   const TrainerOptions& o, const Console& con);
  double step(const Task& task, const std::vector<data::Batch>& step_batches,
              const TrainerOptions& o, int world);
  void validate(const Task& task, const Validation& validation, Run& run, Batches& batches,
                const Console& con);
  void save(Run& run, Batches& batches, bool best);
  void stop(Run& run, Batches& batches, const Halt& halt, const Console& con);
  void draw_loss_picture(const Run& run);
  void report_communication(Run& run, const Console& con);

  nn::Module& model;
  optim::Optimizer& optimizer;
  optim::LambdaLR* schedule;
  io::TrainingCheckpoint checkpoint;
  std::unique_ptr<RunFolder> folder;
  std::map<std::string, std::string> notes;
  std::vector<std::string> tracked;  // the generators' names
  NoteReader read_note;
  std::function<void(const Run&)> on_start;
#ifdef TAPEGRAD_TRAIN_MPI
  std::optional<distributed::DistributedDataParallel> ddp;
#endif
};

Trainer::Trainer(nn::Module& model, optim::Optimizer& optimizer, optim::LambdaLR* schedule,
                 TrainerOptions options)
    : impl_(std::make_unique<Impl>(model, optimizer, schedule)), options_(std::move(options)) {
  const TrainerOptions& o = options_;
  check<ValueError>(o.steps() >= 1, "Trainer: expected steps >= 1, got ", o.steps());
  check<ValueError>(o.grad_accum() >= 1, "Trainer: expected grad_accum >= 1, got ", o.grad_accum());
  check<ValueError>(o.eval_every() >= 1, "Trainer: expected eval_every >= 1, got ", o.eval_every());
  check<ValueError>(o.clip() >= 0 && std::isfinite(o.clip()),
                    "Trainer: expected clip >= 0 (0: no clipping), got ", o.clip());
  check<ValueError>(o.stop_after() >= 0, "Trainer: expected stop_after >= 0, got ", o.stop_after());
  check<ValueError>(o.profile() >= 0, "Trainer: expected profile >= 0, got ", o.profile());
  if (o.recompute()) {  // as Hugging Face's Trainer calls gradient_checkpointing_enable()
    auto* lm = dynamic_cast<nn::transformer::CausalLM*>(&model);
    check<ValueError>(lm != nullptr, "Trainer: recompute: expected a model that recomputes its "
                      "blocks (a CausalLM: GPT, LlamaForCausalLM), got ", model.context(),
                      "; call autograd::checkpoint in its forward instead");
    lm->recompute(true);
  }
#ifdef TAPEGRAD_TRAIN_MPI
  if (distributed::is_initialized())
    rank_ = distributed::rank(), world_ = distributed::world_size();
#endif
}

Trainer::~Trainer() = default;

Trainer& Trainer::track(const std::string& name, std::shared_ptr<Generator> generator) {
  check<ValueError>(
      std::find(impl_->tracked.begin(), impl_->tracked.end(), name) == impl_->tracked.end(),
      "Trainer::track: a generator named '", name, "' is tracked already");
  impl_->checkpoint.add_generator(name, std::move(generator));
  impl_->tracked.push_back(name);
  return *this;
}

Trainer& Trainer::notes(std::map<std::string, std::string> notes, NoteReader read) {
  impl_->notes = std::move(notes);
  impl_->read_note = std::move(read);
  return *this;
}

Trainer& Trainer::on_start(std::function<void(const Run&)> callback) {
  impl_->on_start = std::move(callback);
  return *this;
}

// ---- validation ----------------------------------------------------------------------------------

std::pair<double, double> Trainer::validation_loss(nn::Module& model, const Task& task,
                                                   const Validation& validation) {
  autograd::NoGradGuard no_grad;
  model.eval();
  double total = 0.0;
  std::size_t count = 0, bytes = 0;
  for (const data::Batch& b : validation.batches) {
    std::size_t scored = 0;
    for (const std::int64_t id : b.y)
      if (id != validation.ignore_index) {
        ++scored;
        if (validation.bytes_of) bytes += validation.bytes_of(id);
      }
    total += task.loss_sum ? task.loss_sum(b) : task.loss(b).item() * double(scored);
    count += scored;
  }
  model.train();
  if (count == 0)  // nothing to score: no loss, and no checkpoint is ever "best" by it
    return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  const double nats = total / double(count);
  const double bits_per_byte = validation.bytes_of && bytes > 0
                                   ? total / std::log(2.0) / double(bytes)
                                   : std::numeric_limits<double>::quiet_NaN();
  return {nats, bits_per_byte};
}

// ---- the parts of a run --------------------------------------------------------------------------

namespace {

// The notes every checkpoint of the run carries: the model's description, then the run's record.
std::map<std::string, std::string> run_notes(const std::map<std::string, std::string>& model_notes,
                                             const Run& run) {
  std::map<std::string, std::string> extra = model_notes;
  extra["history.train"] = detail::floats_text(run.train_losses);
  extra["history.val"] = detail::val_history_text(run.val_history);
  extra["best_val"] = detail::best_val_text(run.best_val);
  return extra;
}

std::string note(const io::SafetensorsFile& f, const std::string& key, const std::string& path) {
  const auto v = f.metadata_value("progress.extra." + key);
  if (!v)
    throw CheckpointError("'" + path + "' holds no note '" + key + "': not a checkpoint of a run",
                          "InvalidCheckpoint");
  return *v;
}

// What a step's batches draw from, as it was when the step began: put back when a batch cannot be
// read, so that the checkpoint saved then resumes with the batches the failed step would have had.
struct BatchesAt {
  explicit BatchesAt(const Batches& b) : position(b.position()) {
    for (const auto& [name, generator] : b.generators()) states.emplace_back(generator, *generator);
  }
  void restore(Batches& b) const {
    for (const auto& [generator, state] : states) *generator = state;
    if (position) b.set_position(*position);
  }
  std::vector<std::pair<std::shared_ptr<Generator>, Generator>> states;
  std::optional<std::int64_t> position;
};

// Whether to stop before the next step: under mpirun every rank must stop at the same step (the
// others would wait for it in the next collective), so the ranks agree once a step, all_reduce of
// the largest reason; rank 0 then saves for all of them.
Halt agree_on_halt(std::exception_ptr error, [[maybe_unused]] int world) {
  Halt h{StopSignals::received(), error != nullptr, error, true};
#ifdef TAPEGRAD_TRAIN_MPI
  if (world > 1) {
    const double code = double(h.signal) + (h.data_failed ? 1000.0 : 0.0);
    const auto all = std::int64_t(distributed::all_reduce(code, distributed::ReduceOp::max));
    h.data_failed = all >= 1000;
    h.signal = h.signal != 0 ? h.signal : int(all % 1000);
  }
#endif
  return h;
}

// The name a signal's notice gives the process: "gpt", or "gpt rank 1 of 2 (pid 4321)".
std::string notice_name(const std::string& program, const Console& con) {
  if (con.world == 1) return program;
  return program + " rank " + std::to_string(con.rank) + " of " + std::to_string(con.world) +
         " (pid " + std::to_string(::getpid()) + ")";
}

// "step  80/800  loss 0.5120   222671 tokens/s  lr 2.81e-02  ETA 0.4 s"
void show_progress(const Run& run, const TrainerOptions& o, const Console& con, double lr,
                   const std::vector<data::Batch>& step_batches) {
  const double per_step = run.train_seconds / double(run.step_seconds.size());
  std::size_t tokens = 0;  // of the whole job's step
  for (const data::Batch& b : step_batches) tokens += b.x.size();
  tokens *= std::size_t(con.world);
  std::ostringstream line;
  line << "step " << std::setw(int(std::to_string(o.steps()).size())) << run.step << "/"
       << o.steps() << "  loss " << fixed(run.train_losses.back(), 4) << "  " << std::setw(7)
       << std::int64_t(double(tokens) / per_step) << " tokens/s  lr " << std::scientific
       << std::setprecision(2) << lr << std::defaultfloat << "  ETA "
       << duration(per_step * double(o.steps() - run.step));
  std::cout << con.clear_line() << line.str() << (con.in_place ? "" : "\n") << std::flush;
}

}  // namespace

// Restores the tracked state and the run's record from `path`, every part checked: the notes must
// describe this model, the history must fit the step.
static void resume_from(io::TrainingCheckpoint& checkpoint,
                        const std::map<std::string, std::string>& model_notes,
                        const Trainer::NoteReader& read_note, Run& run, Batches& batches,
                        const fs::path& path) {
  const std::string p = path.string();
  const io::SafetensorsFile f = io::load_safetensors(p);
  for (const auto& [key, value] : model_notes) {
    const std::string saved = read_note ? read_note(f, key, p) : note(f, key, p);
    if (saved != value)
      throw ValueError("--resume: the run in '" + p + "' was made with another " +
                       (key.find('.') != std::string::npos ? key.substr(key.find('.') + 1) : key) +
                       (key.ends_with("vocab") ? " (other text or another tokenizer)" : "") +
                       "; start it again without --resume, or with another --out");
  }
  const io::TrainingProgress progress = checkpoint.restore(f, p);
  run.step = progress.step;
  if (batches.position()) batches.set_position(progress.data_position);
  run.train_losses = detail::floats_from(note(f, "history.train", p), "'" + p + "': history");
  if (std::int64_t(run.train_losses.size()) != run.step)
    throw CheckpointError("'" + p + "': the note 'history.train' holds " +
                              std::to_string(run.train_losses.size()) + " losses for " +
                              std::to_string(run.step) + " steps",
                          "InvalidCheckpoint");
  run.val_history = detail::val_history_from(note(f, "history.val", p), run.step, p);
  // The best loss is what the history shows (and best.safetensors holds, already in
  // run.best_val): the note must read as a loss, but an edited one cannot stop best.safetensors
  // from updating.
  detail::best_val_from(note(f, "best_val", p), p);
  for (std::size_t i = 1; i < run.val_history.size(); ++i)  // (step 0's is no candidate)
    run.best_val = std::min(run.best_val, double(run.val_history[i].second));
}

// ---- the run -------------------------------------------------------------------------------------

void Trainer::use_folder(std::unique_ptr<RunFolder> folder) { impl_->folder = std::move(folder); }

Run Trainer::fit(const Task& task, Batches& batches, const Validation& validation) {
  check<ValueError>(bool(task.loss), "Trainer::fit: the task has no loss");
  Impl& t = *impl_;
  const TrainerOptions& o = options_;
  const Console con{rank_, world_, world_ == 1 && ::isatty(::fileno(stdout)) != 0, o.quiet()};
  Run run;
  for (const auto& [name, generator] : batches.generators()) track(name, generator);

  // 1. The run's folder, locked and checked, and the loss its best.safetensors holds.
  if (!t.folder && !o.out().empty())
    t.folder = std::make_unique<RunFolder>(o.out(), o.resume(), /*lock=*/rank_ == 0);
  const RunFolder* folder = t.folder.get();
  run.best_val = folder ? folder->best_on_disk : INFINITY;
  // 2. Resume: every rank reads the checkpoint, so that every rank continues from one state.
  if (o.resume() && folder && folder->has_last) {
    detail::naming_flag("--resume", [&] {  // (the reader names the file and itself)
      resume_from(t.checkpoint, t.notes, t.read_note, run, batches, folder->last);
    });
    run.saved_step = run.step;
  } else if (o.resume()) {
    std::cout << "no " << (folder ? folder->last.string() : std::string("checkpoint (no --out)"))
              << " to resume from: starting from scratch"
              << (std::isfinite(run.best_val)
                      ? " (" + folder->best.string() + ", validation " + fixed(run.best_val, 4) +
                            ", is kept unless this run does better)"
                      : std::string())
              << "\n";
  }
  if (run.step > o.steps())
    throw ValueError("--steps: the run in '" + folder->last.string() + "' is at step " +
                     std::to_string(run.step) + ", past --steps " + std::to_string(o.steps()) +
                     "; give --steps " + std::to_string(run.step) +
                     " or more (its schedule decays over --steps)");
  if (run.step == o.steps())
    std::cout << "the run in '" << folder->last.string() << "' has done all " << o.steps()
              << " steps: nothing to train (give a larger --steps to train on)\n";
  // 3. Several ranks: the gradients averaged in backward (a collective: every rank builds it).
  t.start_data_parallel(o, rank_, world_);
  if (t.on_start) t.on_start(run);
  // 4. The validation before training: where the loss starts.
  if (run.step == 0 && rank_ == 0) {
    const auto [nats, bits] = validation_loss(t.model, task, validation);
    run.val_history.emplace_back(0, float(nats));
    const std::int64_t V = validation.num_classes;
    std::cout << "step 0: validation loss " << fixed(nats, 4)
              << (V > 0 ? " (ln " + std::to_string(V) + " = " + fixed(std::log(double(V)), 4) + ")"
                        : std::string())
              << (std::isnan(bits) ? "" : ", " + fixed(bits, 4) + " bits per byte") << std::endl;
  }
  // 5. The steps, each validated and saved on its schedule. From here on a first Ctrl-C (or
  // SIGTERM) lets the current step finish and saves it; until here there is nothing to save, and
  // a signal ends the program at once. (A program that installed StopSignals itself keeps it.)
  std::optional<StopSignals> signals;
  if (!StopSignals::active())
    signals.emplace(notice_name(o.program(), con),
                    con.world > 1 ? "; mpirun sends SIGTERM on Ctrl-C, and when another rank has "
                                    "failed: its own message then says which"
                                  : "");
  if (const Halt halt = t.train_steps(task, batches, validation, run, o, con)) {
    t.stop(run, batches, halt, con);  // saves, says how to go on; rethrows a DataError
    return run;
  }
  if (con.in_place && !con.quiet) std::cout << '\n';
  // 6. How the run ended: the communication's cost, the loss picture.
  t.report_communication(run, con);
  if (o.stop_after() > 0 && o.stop_after() < o.steps()) {
    std::cout << "stopped after step " << run.step << "; continue with --resume"
              << (folder ? " (checkpoint " + folder->last.string() + ")" : std::string()) << "\n";
    return run;
  }
  if (o.pictures() && folder && rank_ == 0) t.draw_loss_picture(run);
  return run;
}

// ---- the parts of fit() --------------------------------------------------------------------------

// Dropout under several ranks: each rank its own masks (the same masks for different batches
// would be a weaker regulariser). A Dropout's masks are the stream {seed, call number}
// (nn/dropout.hpp), and its calls advance alike on every rank (one training forward a step). So
// every layer takes its seed now, from its generator, which all ranks hold alike, and rank r uses
// that seed mixed with r: rank r's streams are a function of rank 0's, which the checkpoint saves,
// and a run stopped and resumed on the same number of ranks continues every rank's masks.
void Trainer::Impl::start_data_parallel([[maybe_unused]] const TrainerOptions& o,
                                        [[maybe_unused]] int rank, [[maybe_unused]] int world) {
#ifdef TAPEGRAD_TRAIN_MPI
  if (!distributed::is_initialized()) return;
  ddp.emplace(model,
              distributed::DistributedDataParallelOptions().check_in_sync(o.check_in_sync()));
  if (world > 1)
    for (const auto& [name, m] : model.named_modules())
      if (auto* d = dynamic_cast<nn::Dropout*>(m)) {
        if (d->options().p() == 0.0) continue;
        if (d->reseed_pending()) {
          d->next_stream();                   // takes the seed from the layer's generator
          d->set_stream_state(d->seed(), 0);  // and counts no forward yet
        }
        if (rank > 0)
          d->set_stream_state(d->seed() ^ (std::uint64_t(rank) * 0x9E3779B97F4A7C15ULL),
                              d->calls());
      }
#endif
}

// One optimizer step on this rank's batches: each backward adds its share of the gradient
// (loss / K), then the clipping, the optimizer and the schedule. Returns the step's mean loss,
// averaged over the ranks.
double Trainer::Impl::step(const Task& task, const std::vector<data::Batch>& step_batches,
                           const TrainerOptions& o, [[maybe_unused]] int world) {
  const auto K = std::int64_t(step_batches.size());
  double step_loss = 0.0;
  for (std::int64_t k = 0; k < K; ++k) {
    std::optional<autocast::bf16> mixed;  // bf16(): forward and backward's products
    if (o.bf16()) mixed.emplace();
    const Tensor loss = task.loss(step_batches[std::size_t(k)]);
#ifdef TAPEGRAD_TRAIN_MPI
    // Under mpirun the gradients are averaged over the ranks once, in the last backward.
    std::optional<distributed::DistributedDataParallel::NoSync> hold;
    if (ddp && k + 1 < K) hold.emplace(*ddp);
#endif
    (K == 1 ? loss : loss * (1.0 / double(K))).backward();
    step_loss += loss.item() / double(K);
  }
  if (o.clip() > 0) optim::clip_grad_norm_(model.parameters(), o.clip());
  optimizer.step();
  optimizer.zero_grad();
  if (schedule) schedule->step();
#ifdef TAPEGRAD_TRAIN_MPI
  if (world > 1) step_loss = distributed::all_reduce(step_loss, distributed::ReduceOp::average);
#endif
  return step_loss;
}

void Trainer::Impl::save(Run& run, Batches& batches, bool best) {
  if (!folder) return;
  const io::TrainingProgress progress(run.step, batches.position().value_or(run.step),
                                      run_notes(notes, run));
  checkpoint.save(folder->last.string(), progress);
  if (best) checkpoint.save(folder->best.string(), progress);
  run.saved_step = run.step;
}

void Trainer::Impl::validate(const Task& task, const Validation& validation, Run& run,
                             Batches& batches, const Console& con) {
  const auto [nats, bits] = validation_loss(model, task, validation);
  run.val_history.emplace_back(run.step, float(nats));
  run.val_bits_per_byte = bits;
  const bool best = nats < run.best_val;
  if (best) run.best_val = nats;
  save(run, batches, best);
  if (con.quiet) return;
  std::cout << con.clear_line() << "step " << run.step << ": validation loss " << fixed(nats, 4)
            << (std::isnan(bits) ? "" : " (" + fixed(bits, 4) + " bits per byte)")
            << (best && folder ? " (best so far, saved)" : "") << std::endl;
}

// The steps from run.step to the end (steps, stop_after), with the progress line, the profiler's
// window and the validations; or until a Halt: then the run is left as it was after its last whole
// step, for stop() to save.
Halt Trainer::Impl::train_steps(const Task& task, Batches& batches, const Validation& validation,
                                Run& run, const TrainerOptions& o, const Console& con) {
  const std::int64_t stop = o.stop_after() > 0 ? std::min(o.stop_after(), o.steps()) : o.steps();
  double shown_at = -1.0;
  // profile(N): steps [first, first + N) are profiled, after 10 warm-up steps where the run has
  // them; a validation cuts the window short (its time is nobody's training step).
  const std::int64_t profile_first =
      std::clamp<std::int64_t>(stop - o.profile(), run.step, run.step + 10);
  std::optional<autograd::Profiler> profiler;
  std::int64_t profiled = 0;
  const auto print_profile = [&] {
    if (!profiler) return;
    profiler->stop();
    if (con.rank == 0)
      std::cout << con.clear_line() << "profile of " << profiled << " training step"
                << (profiled == 1 ? "" : "s") << " (" << (run.step - profiled + 1) << " to "
                << run.step << "), CPU time of all threads:\n"
                << *profiler << std::flush;
    profiler.reset();
  };
  std::exception_ptr data_error;  // the data failed (reading a batch, or validating)
  model.train();
  while (run.step < stop) {
    // The step's batches, all read before anything changes: a batch that cannot be read (a token
    // file that shrank: DataError) stops the run before the step, never halfway through it. The
    // batches' generators as the step finds them (a copy continues the same stream): a step that
    // does not happen leaves them so.
    const BatchesAt before(batches);
    std::vector<data::Batch> step_batches;
    if (!data_error) try {
        for (std::int64_t k = 0; k < o.grad_accum(); ++k) step_batches.push_back(batches.next());
      } catch (const DataError&) {
        data_error = std::current_exception();
      }
    if (const Halt halt = agree_on_halt(data_error, con.world)) {
      before.restore(batches);
      return halt;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const double lr = optimizer.lr(0);
    if (o.profile() > 0 && run.step == profile_first) profiler.emplace();
    const double loss = step(task, step_batches, o, con.world);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run.train_seconds += dt;
    run.step_seconds.push_back(float(dt));
    run.train_losses.push_back(float(loss));
    const std::int64_t done = ++run.step;
    const bool evaluates =
        con.rank == 0 && (done % o.eval_every() == 0 || done == o.steps() || done == stop);
    if (profiler && (++profiled == o.profile() || evaluates || done == stop)) print_profile();
    const bool show =
        done == stop || (con.in_place ? run.train_seconds - shown_at >= 0.1
                                      : done % std::max<std::int64_t>(1, o.steps() / 10) == 0);
    if (!con.quiet && show) {
      shown_at = run.train_seconds;
      show_progress(run, o, con, lr, step_batches);
    }
    if (!evaluates) continue;
    try {
      validate(task, validation, run, batches, con);
    } catch (const DataError&) {  // the step is whole: it is saved, without its validation
      data_error = std::current_exception();
    }
  }
  // The last step's validation failed: rank 0 stops alone (the other ranks have finished).
  if (data_error) return Halt{0, true, data_error, false};
  return {};
}

// A run halted before its end: rank 0 saves the state after its last whole step (unless
// last.safetensors holds it already) and says how to go on; every rank waits for that save before
// it ends (mpirun ends the whole job as soon as one rank exits with an error). Then a DataError is
// rethrown (the program exits 2 naming the file); a signal returns, run.stopped_by set.
void Trainer::Impl::stop(Run& run, Batches& batches, const Halt& halt, const Console& con) {
  if (con.rank == 0) {
    if (con.in_place) std::cout << '\n';  // after the progress line
    if (run.step > run.saved_step && run.step > 0) save(run, batches, false);
    const std::string why = halt.signal != 0 ? "stopped by " + StopSignals::name(halt.signal)
                                             : "stopped: the training data failed";
    if (run.saved_step >= 0 && folder)
      std::cout << why << " after step " << run.step << "; " << folder->last.string()
                << " holds it: continue with the same flags and --resume"
                << (halt.data_failed ? ", once the data is whole again" : "") << std::endl;
    else
      std::cout << why << " "
                << (run.step == 0 ? "before the first step"
                                  : "after step " + std::to_string(run.step))
                << "; nothing was saved" << std::endl;
  }
#ifdef TAPEGRAD_TRAIN_MPI
  if (con.world > 1 && halt.agreed) distributed::barrier();
#endif
  if (halt.error) std::rethrow_exception(halt.error);
  if (halt.data_failed)
    throw DataError("another rank could not read its batches (its message is above); " +
                    (folder ? folder->last.string() + " holds step " + std::to_string(run.step)
                            : std::string("nothing was saved")));
  run.stopped_by = halt.signal;
}

void Trainer::Impl::draw_loss_picture(const Run& run) {
  const std::vector<Picture> pictures = {loss_picture("the loss of the run", "target")};
  write_loss_data(folder->dir, run.train_losses, run.val_history);
  write_plot_script(folder->dir,
                    "# Draws the run's loss from loss.dat and val.dat: gnuplot plots.gp", pictures);
  train::report(draw(folder->dir, pictures));
}
void Trainer::Impl::report_communication([[maybe_unused]] Run& run,
                                         [[maybe_unused]] const Console& con) {
#ifdef TAPEGRAD_TRAIN_MPI
  if (!ddp || ddp->total().steps == 0) return;
  const distributed::SyncStats& t = ddp->total();
  run.exposed_communication_ms = 1e3 * t.exposed_seconds / double(t.steps);
  std::cout << "communication: " << t.buckets / t.steps << " buckets of gradients per step ("
            << fixed(double(t.bytes) / double(t.steps) / 1e6, 2) << " MB), "
            << fixed(run.exposed_communication_ms, 3) << " ms per step exposed (waited for at the "
            << "end of backward), " << fixed(1e3 * t.communication_seconds / double(t.steps), 3)
            << " ms from the first bucket's start to the last one's end\n";
#endif
}

}  // namespace tapegrad::train
