// examples/gpt/gpt.cpp: train a small GPT on real text, character by character — nanoGPT's "baby
// GPT" (4 layers, 4 heads, width 128, context 64) on Debian's fortunes, or on any UTF-8 text.
//
//     gpt                                      # the baby GPT, 2,000 steps, a few minutes on one core
//     gpt --pos sinusoidal                     # the seeds' sinusoidal positions instead of learned ones
//     gpt --data shakespeare.txt --out run2    # your own text
//     gpt --resume                             # continue an interrupted run, bit for bit
//     mpirun -np 2 gpt                         # data-parallel on 2 processes, 12 windows each
//
// The recipe (nanoGPT's train.py): random windows of the training text (text_data.hpp), the mean
// cross-entropy of every next character, AdamW (betas 0.9, 0.99; weight decay 0.1 on the matrices
// only, GPT::parameter_groups), gradients clipped to norm 1, the learning rate warmed up linearly
// for 100 steps, then cosine-decayed from 1e-3 to 1e-4 (optim::cosine_with_warmup). Every
// --eval-every steps it measures the loss on a fixed set of validation windows and writes the
// checkpoint (OUT/last.safetensors, and OUT/best.safetensors when the validation loss is the
// lowest yet): model, optimizer, schedule, generators and history, so --resume continues exactly.
// At the end: the loss picture and the attention heatmaps (gnuplot), a sample of generated text
// and one line "gpt result: ..." for bench/gpt_compare.
//
// On several processes (`mpirun -np N gpt ...`, when tapegrad was built with MPI): every rank
// holds the whole model and trains on its own --batch-size windows of each step's N * B, which
// all ranks draw alike from the shared data generator (rank r takes windows r*B .. r*B + B - 1);
// distributed::DistributedDataParallel averages the gradients during backward, so every rank
// takes the same optimizer step. Rank 0 alone prints, validates and writes the checkpoints; the
// checkpoint holds nothing about the number of ranks, so --resume continues on any number of
// them (with N' ranks, each step then trains on N' * B windows).
//
// Exit status: 0 when the validation loss fell below its value before training, 1 otherwise;
// 2 for bad flags or data.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>
#ifdef TAPEGRAD_GPT_MPI
#include <tapegrad/distributed.hpp>
#endif

#include "run_files.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;
namespace fs = std::filesystem;

namespace {

struct Settings {
  std::vector<std::string> data;
  std::int64_t steps = 2000, batch_size = 12, block_size = 64, n_layer = 4, n_head = 4,
               n_embd = 128;
  std::int64_t warmup = 100, eval_every = 250, eval_windows = 480, threads = 1, stop_after = 0;
  std::int64_t sample_tokens = 500;
  double lr = 1e-3, min_lr = 1e-4, beta1 = 0.9, beta2 = 0.99, weight_decay = 0.1, clip = 1.0,
         dropout = 0.0;
  double val_fraction = 0.1;
  std::uint64_t seed = 0, split_seed = 0;
  std::string pos = "learned", gelu = "none", out = "gpt_out";
  bool resume = false, quiet = false, check_in_sync = false;
};

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

// The mean loss over the fixed validation windows (every target that is not <unk>), eval mode.
double validation_loss(tt::GPT& model, const std::vector<std::int64_t>& val_ids,
                       const std::vector<std::size_t>& starts, std::size_t B, std::size_t T) {
  autograd::NoGradGuard no_grad;
  model.eval();
  double total = 0.0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < starts.size(); i += B) {
    const std::vector<std::size_t> chunk(
        starts.begin() + std::ptrdiff_t(i),
        starts.begin() + std::ptrdiff_t(std::min(i + B, starts.size())));
    const data::Batch b = data::windows(val_ids, chunk, T);
    IndexArray y = b.y;
    y.reshape({y.size()});
    const Tensor logits = ops::reshape(model.forward(b.x), {-1, model.config().vocab_size()});
    const auto options =
        ops::CrossEntropyOptions().ignore_index(data::Vocabulary::kUnk).reduction("sum");
    total += ops::cross_entropy(logits, y, options).item();
    for (std::int64_t id : y) count += id != data::Vocabulary::kUnk;
  }
  model.train();
  return count ? total / double(count) : 0.0;
}

// The first validation line of at least 24 characters, cut to the context (for the heatmaps).
std::u32string attention_line(const std::vector<std::u32string>& val_entries, std::size_t T) {
  for (const std::u32string& e : val_entries)
    for (std::size_t begin = 0; begin < e.size();) {
      std::size_t end = e.find(U'\n', begin);
      if (end == std::u32string::npos) end = e.size();
      if (end - begin >= 24) return e.substr(begin, std::min(end - begin, T));
      begin = end + 1;
    }
  return val_entries.empty()
             ? U""
             : val_entries.front().substr(0, std::min(val_entries.front().size(), T));
}

}  // namespace

int main(int argc, char** argv) {
  std::cerr << tapegrad::environment_line() << '\n';
#ifdef TAPEGRAD_GPT_MPI
  // MPI only when mpirun started us: alone, the program runs as it does without MPI.
  std::optional<distributed::Environment> mpi;
  if (distributed::launched_by_mpirun()) mpi.emplace(argc, argv);
  const int rank = mpi ? distributed::rank() : 0, world = mpi ? distributed::world_size() : 1;
#else
  const int rank = 0, world = 1;
#endif
  // Rank 0 speaks for the job: the other ranks' std::cout has no buffer, so what they would print
  // is dropped (their errors, on std::cerr, still show).
  if (rank != 0) std::cout.rdbuf(nullptr);
  Settings s;
  CLI::App app(
      "Train a small GPT on real text, one character at a time (nanoGPT's baby GPT on Debian's "
      "fortunes)");
  app.add_option("--data", s.data,
                 "UTF-8 text files (default: every fortune file in /usr/share/games/fortunes)");
  app.add_option("--steps", s.steps, "training steps (the schedule decays over them)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-size", s.batch_size, "windows per step (per rank under mpirun)")
      ->check(CLI::PositiveNumber);
  app.add_option("--block-size", s.block_size, "context length in characters")
      ->check(CLI::PositiveNumber);
  app.add_option("--n-layer", s.n_layer, "Transformer blocks")->check(CLI::PositiveNumber);
  app.add_option("--n-head", s.n_head, "attention heads (must divide --n-embd)")
      ->check(CLI::PositiveNumber);
  app.add_option("--n-embd", s.n_embd, "model width")->check(CLI::PositiveNumber);
  app.add_option("--dropout", s.dropout, "dropout probability")->check(CLI::Range(0.0, 1.0));
  app.add_option("--pos", s.pos, "position information")
      ->check(CLI::IsMember({"learned", "sinusoidal"}));
  app.add_option("--gelu", s.gelu, "GELU form of the MLPs")->check(CLI::IsMember({"none", "tanh"}));
  app.add_option("--lr", s.lr, "peak learning rate, after the warm-up")->check(CLI::PositiveNumber);
  app.add_option("--min-lr", s.min_lr, "learning rate at the end of the cosine decay")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", s.warmup, "linear warm-up steps")->check(CLI::NonNegativeNumber);
  app.add_option("--beta1", s.beta1, "AdamW beta1")->check(CLI::Range(0.0, 1.0));
  app.add_option("--beta2", s.beta2, "AdamW beta2")->check(CLI::Range(0.0, 1.0));
  app.add_option("--weight-decay", s.weight_decay, "AdamW decoupled weight decay of the matrices")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--clip", s.clip, "gradient clipping norm (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--eval-every", s.eval_every, "steps between validations and checkpoints")
      ->check(CLI::PositiveNumber);
  app.add_option("--eval-windows", s.eval_windows, "fixed validation windows")
      ->check(CLI::PositiveNumber);
  app.add_option("--val-fraction", s.val_fraction, "share of the entries held out")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", s.seed, "seed of the initial weights, dropout and batches");
  app.add_option("--split-seed", s.split_seed,
                 "seed of the train/validation split and the validation windows");
  app.add_option("--threads", s.threads,
                 "threads of tapegrad's kernels (results do not depend on it)")
      ->check(CLI::PositiveNumber);
  app.add_option("--out", s.out, "folder for checkpoints, data files and pictures");
  app.add_flag("--resume", s.resume, "continue from OUT/last.safetensors");
  app.add_option("--stop-after", s.stop_after,
                 "stop after this step (checkpoint saved), to --resume later")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--sample-tokens", s.sample_tokens, "characters to generate at the end")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quiet", s.quiet, "no progress lines");
  app.add_flag(
      "--check-in-sync", s.check_in_sync,
      "under mpirun: after every backward, check that every rank holds the same bits (slower)");
  CLI11_PARSE(app, argc, argv);
  if (s.warmup >= s.steps) {
    std::cerr << "--warmup: expected fewer warm-up steps than --steps (" << s.steps << "), got "
              << s.warmup << '\n';
    return 2;
  }
  set_num_threads(static_cast<int>(s.threads));
  const std::size_t T = std::size_t(s.block_size), B = std::size_t(s.batch_size);
  const std::size_t global_B =
      B * std::size_t(world);  // the windows of one step, all ranks together

  // ---- the data ----
  const std::vector<std::string> files = s.data.empty() ? data::fortune_files() : s.data;
  if (files.empty()) {
    std::cerr << "gpt: no text: " << data::kFortunesDir
              << " has no fortune files; install Debian's fortunes "
              << "(scripts/setup.sh does) or give --data FILE...\n";
    return 2;
  }
  data::Split split;
  std::vector<std::int64_t> train_ids, val_ids;
  data::Vocabulary vocab;
  std::vector<std::size_t> val_starts;
  try {
    split = data::split_entries(data::read_entries(files), s.val_fraction, s.split_seed);
    const std::u32string train_text = data::join_entries(split.train),
                         val_text = data::join_entries(split.val);
    vocab = data::Vocabulary(train_text);
    train_ids = vocab.encode(train_text);
    val_ids = vocab.encode(val_text);
    Generator window_gen(s.split_seed + 1);
    val_starts = data::random_starts(val_ids.size(), T, std::size_t(s.eval_windows), window_gen);
    if (train_ids.size() <= T)
      throw std::runtime_error("the training text is shorter than one window");
  } catch (const std::exception& e) {
    std::cerr << "gpt: " << e.what() << '\n';
    return 2;
  }
  const auto unknown = std::count(val_ids.begin(), val_ids.end(), data::Vocabulary::kUnk);

  // ---- the model, the optimizer, the schedule, the checkpoint ----
  const auto config = tt::GPTConfig(vocab.size(), s.block_size)
                          .n_layer(s.n_layer)
                          .n_head(s.n_head)
                          .n_embd(s.n_embd)
                          .dropout(s.dropout)
                          .position(s.pos)
                          .gelu(s.gelu);
  auto model_gen = std::make_shared<Generator>(s.seed),
       data_gen = std::make_shared<Generator>(s.seed + 1);
  std::unique_ptr<tt::GPT> model;
  try {
    model = std::make_unique<tt::GPT>(config, model_gen);
  } catch (const std::exception& e) {
    std::cerr << "gpt: " << e.what() << '\n';
    return 2;
  }
  const auto adamw =
      optim::AdamWOptions(s.lr).betas({s.beta1, s.beta2}).weight_decay(s.weight_decay);
  const tt::ParameterGroups groups = model->parameter_groups();  // nanoGPT's: decay the matrices
  optim::AdamW opt(
      {{groups.decay, adamw}, {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}});
  const double min_ratio = std::min(1.0, s.min_lr / s.lr);
  const std::int64_t warmup = s.warmup, steps = s.steps;
  optim::LambdaLR sched(
      opt, [=](std::int64_t e) { return optim::cosine_with_warmup(e, warmup, steps, min_ratio); });
  io::TrainingCheckpoint ckpt(*model, opt, &sched);
  ckpt.add_generator("model", model_gen).add_generator("data", data_gen);

  const fs::path dir(s.out);
  fs::create_directories(dir);
  const fs::path last_path = dir / "last.safetensors", best_path = dir / "best.safetensors";
  std::vector<float> train_losses;
  std::vector<std::pair<std::int64_t, float>> val_history;
  std::vector<float> step_seconds;
  double best_val = INFINITY;
  std::int64_t step = 0;
  const auto notes = gpt::model_notes(config, vocab);
  if (s.resume && fs::exists(last_path)) {
    try {
      const io::SafetensorsFile f = io::load_safetensors(last_path.string());
      for (const auto& [key, value] : notes)
        if (gpt::note(f, key, last_path.string()) != value)
          throw std::runtime_error(
              "the run in '" + last_path.string() + "' was made with another " + key.substr(4) +
              (key == "gpt.vocab" ? " (other text)" : "") + "; start it again without --resume");
      step = ckpt.restore(f, last_path.string()).step;
      train_losses = gpt::floats_from(gpt::note(f, "history.train", last_path.string()));
      const std::vector<float> v =
          gpt::floats_from(gpt::note(f, "history.val", last_path.string()));
      for (std::size_t i = 0; i + 1 < v.size(); i += 2)
        val_history.emplace_back(std::int64_t(v[i]), v[i + 1]);
      best_val = std::strtod(gpt::note(f, "best_val", last_path.string()).c_str(), nullptr);
    } catch (const std::exception& e) {
      std::cerr << "gpt: cannot resume: " << e.what() << '\n';
      return 2;
    }
  } else if (s.resume) {
    std::cout << "no " << last_path.string() << " to resume from: starting from scratch\n";
  }
#ifdef TAPEGRAD_GPT_MPI
  // Every rank has read the checkpoint (or built the same model from the same seed); constructing
  // DDP is a collective, so rank 0 cannot overwrite the file before the others have read it.
  std::optional<distributed::DistributedDataParallel> ddp;
  if (mpi)
    ddp.emplace(*model,
                distributed::DistributedDataParallelOptions().check_in_sync(s.check_in_sync));
  // Dropout: each rank its own masks (the same masks for different windows would be a weaker
  // regulariser). A Dropout's masks are the stream {seed, call number} (nn/dropout.hpp), and its
  // calls advance alike on every rank (one training forward a step). So every layer takes its seed
  // now, from the generator all ranks hold alike, and rank r uses that seed mixed with r: rank r's
  // streams are a function of rank 0's, which the checkpoint saves, and a run stopped and resumed
  // on the same number of ranks continues every rank's masks where they were.
  if (mpi && world > 1 && s.dropout > 0)  // (on one rank: as without MPI)
    for (const auto& [name, m] : model->named_modules())
      if (auto* d = dynamic_cast<nn::Dropout*>(m)) {
        if (d->reseed_pending()) d->set_stream_state(model_gen->next_u64(), 0);
        if (rank > 0)
          d->set_stream_state(d->seed() ^ (std::uint64_t(rank) * 0x9E3779B97F4A7C15ULL),
                              d->calls());
      }
#endif

  const std::int64_t n_params = model->num_params();
  std::cout << "gpt: " << files.size() << " files, " << split.train.size() << " training and "
            << split.val.size() << " validation entries (" << train_ids.size() << " and "
            << val_ids.size() << " characters; " << unknown
            << " validation characters are <unk>), vocabulary " << vocab.size()
            << "\n     n_layer=" << s.n_layer << " n_head=" << s.n_head << " n_embd=" << s.n_embd
            << " block_size=" << s.block_size << " pos=" << s.pos << " gelu=" << s.gelu
            << " dropout=" << s.dropout << ", " << n_params << " parameters (" << std::fixed
            << std::setprecision(2) << model->flops_per_token() / 1e6 << std::defaultfloat
            << " MFLOP per token); batch " << B
            << (world > 1 ? " per rank x " + std::to_string(world) + " ranks" : "") << ", "
            << s.steps << " steps, threads=" << s.threads
            << (step > 0 ? ", resumed at step " + std::to_string(step) : std::string())
            << std::endl;

  auto save = [&](std::int64_t done, bool best) {
    std::map<std::string, std::string> extra = notes;
    extra["history.train"] = gpt::floats_text(train_losses);
    std::vector<float> v;
    for (const auto& [at, loss] : val_history) v.push_back(float(at)), v.push_back(loss);
    extra["history.val"] = gpt::floats_text(v);
    std::ostringstream b;
    b << std::hexfloat << best_val;
    extra["best_val"] = b.str();
    ckpt.save(last_path.string(), {done, done, extra});
    if (best) ckpt.save(best_path.string(), {done, done, extra});
  };

  if (step == 0 && rank == 0) {
    const double v = validation_loss(*model, val_ids, val_starts, B, T);
    val_history.emplace_back(0, float(v));
    std::cout << "step 0: validation loss " << fixed(v, 4) << " (ln " << vocab.size() << " = "
              << fixed(std::log(double(vocab.size())), 4) << ")" << std::endl;
  }
  const std::int64_t stop = s.stop_after > 0 ? std::min(s.stop_after, s.steps) : s.steps;
  const bool in_place = isatty(fileno(stdout)) != 0;
  using clock = std::chrono::steady_clock;
  double shown_at = -1.0, train_seconds = 0.0;
  model->train();
  for (; step < stop; ++step) {
    const auto t0 = clock::now();
    // Every rank draws the step's global_B windows alike and trains on its own B of them.
    const std::vector<std::size_t> starts =
        data::random_starts(train_ids.size(), T, global_B, *data_gen);
    const std::vector<std::size_t> mine(starts.begin() + std::ptrdiff_t(std::size_t(rank) * B),
                                        starts.begin() + std::ptrdiff_t(std::size_t(rank + 1) * B));
    const data::Batch b = data::windows(train_ids, mine, T);
    Tensor loss = model->loss(b.x, b.y, data::Vocabulary::kUnk);
    loss.backward();  // under mpirun, the gradients are averaged over the ranks here
    if (s.clip > 0) optim::clip_grad_norm_(model->parameters(), s.clip);
    opt.step();
    opt.zero_grad();
    sched.step();
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    train_seconds += dt;
    step_seconds.push_back(float(dt));
    double step_loss = loss.item();
#ifdef TAPEGRAD_GPT_MPI
    if (mpi)
      step_loss =
          distributed::all_reduce(step_loss, distributed::ReduceOp::average);  // the global batch's
#endif
    train_losses.push_back(float(step_loss));
    const std::int64_t done = step + 1;
    if (!s.quiet) {
      const bool shown_now =
          in_place ? (train_seconds - shown_at >= 0.1 || done == stop)
                   : (done % std::max<std::int64_t>(1, s.steps / 10) == 0 || done == stop);
      if (shown_now) {
        shown_at = train_seconds;
        const double per_step = train_seconds / double(step_seconds.size());
        std::ostringstream line;
        line << "step " << std::setw(int(std::to_string(s.steps).size())) << done << "/" << s.steps
             << "  loss " << fixed(train_losses.back(), 4) << "  " << std::setw(7)
             << std::int64_t(double(global_B * T) / per_step) << " tokens/s  lr " << std::scientific
             << std::setprecision(2) << sched.get_last_lr()[0] << std::defaultfloat << "  ETA "
             << duration(per_step * double(s.steps - done));
        if (in_place)
          std::cout << '\r' << line.str() << "\x1b[K" << std::flush;
        else
          std::cout << line.str() << '\n' << std::flush;
      }
    }
    if (rank == 0 && (done % s.eval_every == 0 || done == s.steps || done == stop)) {
      const double v = validation_loss(*model, val_ids, val_starts, B, T);
      val_history.emplace_back(done, float(v));
      const bool best = v < best_val;
      if (best) best_val = v;
      save(done, best);
      if (!s.quiet)
        std::cout << (in_place ? "\r\x1b[K" : "") << "step " << done << ": validation loss "
                  << fixed(v, 4) << (best ? " (best so far, saved)" : "") << std::endl;
    }
  }
  if (in_place && !s.quiet) std::cout << '\n';
  if (stop < s.steps) {
    std::cout << "stopped after step " << stop << "; continue with --resume (checkpoint "
              << last_path.string() << ")\n";
    return 0;
  }
  double exposed_ms = 0.0;  // communication backward waited for at its end, per step
#ifdef TAPEGRAD_GPT_MPI
  if (ddp && ddp->total().steps > 0) {
    const distributed::SyncStats& t = ddp->total();
    exposed_ms = 1e3 * t.exposed_seconds / double(t.steps);
    std::cout << "communication: " << t.buckets / t.steps << " buckets of gradients per step ("
              << fixed(double(t.bytes) / double(t.steps) / 1e6, 2) << " MB), "
              << fixed(exposed_ms, 3)
              << " ms per step exposed (waited for at the end of backward), "
              << fixed(1e3 * t.communication_seconds / double(t.steps), 3)
              << " ms from the first bucket's start "
              << "to the last one's end\n";
  }
#endif
  if (rank != 0) return 0;  // rank 0 alone draws, samples and reports

  // ---- what the run shows ----
  const std::u32string line = attention_line(split.val, T);
  std::vector<Array> weights;
  {
    autograd::NoGradGuard no_grad;
    model->eval();
    IndexArray ids = IndexArray::from_shape({1, line.size()});
    const std::vector<std::int64_t> enc = vocab.encode(line);
    std::copy(enc.begin(), enc.end(), ids.begin());
    if (!line.empty()) model->features(ids, &weights);
  }
  gpt::write_loss_data(dir, train_losses, val_history);
  gpt::write_attention_data(dir, weights);
  gpt::write_plot_script(dir,
                         "GPT on " + std::string(s.data.empty() ? "the fortunes" : "your text") +
                             ": " + std::to_string(s.n_layer) + " layers, width " +
                             std::to_string(s.n_embd) + ", " + s.pos + " positions",
                         weights.size(), std::size_t(s.n_head), line);
  std::cout << gpt::draw(dir) << "\nattention line: \"" << data::encode_utf8(line) << "\"\n";

  if (s.sample_tokens > 0) {
    Generator sample_gen(s.seed + 2);
    IndexArray prompt = IndexArray::from_shape({1, 2});
    prompt(0, 0) = vocab.id(U'%');
    prompt(0, 1) = vocab.id(U'\n');
    const auto options = tt::GenerateOptions(s.sample_tokens).temperature(0.8).top_k(200);
    const auto t0 = clock::now();
    const IndexArray out = model->generate(prompt, options, sample_gen);
    const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
    std::cout << "sample (temperature 0.8, top-k 200, " << s.sample_tokens << " characters, "
              << fixed(double(s.sample_tokens) / seconds, 0) << " characters/s with the cache):\n"
              << vocab.decode(out.data() + 2, out.size() - 2) << "\n";
  }

  std::vector<float> sorted(
      step_seconds.begin() + std::min<std::ptrdiff_t>(10, std::ptrdiff_t(step_seconds.size()) - 1),
      step_seconds.end());
  float median = 0.0f;
  if (!sorted.empty()) {
    std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(sorted.size() / 2),
                     sorted.end());
    median = sorted[sorted.size() / 2];
  }
  const double final_val = val_history.back().second, first_val = val_history.front().second;
  std::cout << "gpt result: steps=" << s.steps << " val_loss=" << fixed(final_val, 4)
            << " best_val_loss=" << fixed(best_val, 4)
            << " train_loss=" << fixed(train_losses.back(), 4)
            << " step_ms_median=" << fixed(median * 1e3, 3)
            << " tokens_per_s=" << fixed(median > 0 ? double(global_B * T) / median : 0.0, 1)
            << " ranks=" << world << " comm_exposed_ms=" << fixed(exposed_ms, 3)
            << " flops_per_token=" << std::int64_t(model->flops_per_token())
            << " seconds=" << fixed(train_seconds, 1) << std::endl;
  if (!(final_val < first_val)) {
    std::cerr << "the validation loss did not fall: " << first_val << " -> " << final_val << '\n';
    return 1;
  }
  return 0;
}
