// examples/copy_task.cpp: The Annotated Transformer's first example, "A First Example": train an
// encoder-decoder Transformer to copy random sequences of symbols, then greedy-decode a sequence it
// has never seen. Everything is the tutorial's recipe (harvardnlp/annotated-transformer):
//   data      batches of random ids in [1, V), length 10, the first id of every row set to 1;
//             the target is the source: tgt = data[:, :-1] is fed in, tgt_y = data[:, 1:] predicted
//   model     make_model(V, V, N) (Xavier init), dropout 0.1, pre-norm residuals
//   loss      LabelSmoothing(V, padding_idx 0, smoothing) summed, divided by the number of tokens
//   optimiser Adam(base_lr, betas (0.9, 0.98), eps 1e-9), LambdaLR(noam(step, d_model, 1, warmup))
// Each epoch trains on `batches` batches and evaluates on 5 fresh ones (eval mode, no grad); it
// prints the mean loss per token, tokens/s, CPU seconds and the learning rate. At the end it
// decodes 0 1 2 ... 9 (or --source) and saves the model's state dict to a safetensors file.
//
//     copy_task                                  # d_model 128, d_ff 512: about 1.5 minutes on one core
//     copy_task --d-model 512 --d-ff 2048        # the tutorial's model: about 16 times the work
//
// Exit status: 0 when the loss fell (and, with --expect-copy, the decode is an exact copy), 1
// otherwise, 2 for a bad flag or file, with one line saying which.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"
#include "common/flag_checks.hpp"

using namespace tapegrad;

namespace {

struct Settings {
  std::int64_t vocab = 11, seq_len = 10, batch_size = 80, batches = 20, eval_batches = 5,
               epochs = 20;
  std::int64_t layers = 2, d_model = 128, d_ff = 512, heads = 8, warmup = 400, threads = 1;
  double dropout = 0.1, base_lr = 0.5, smoothing = 0.0;
  std::uint64_t seed = 0;
  std::string checkpoint = "copy_task.safetensors";
  std::vector<std::int64_t> source{0, 1, 2, 3, 4,
                                   5, 6, 7, 8, 9};  // the tutorial's held-out sequence
  std::int64_t start_symbol = 0;                    // and its start symbol
  bool expect_copy = false;
};

// The tutorial's Batch: masks and the shifted target for one (B, L) block of ids (pad = 0).
struct Batch {
  IndexArray src, tgt, tgt_y;
  Mask src_mask, tgt_mask;
  std::int64_t ntokens = 0;
};

Batch make_batch(const IndexArray& data, std::int64_t pad) {
  const std::size_t B = data.shape()[0], L = data.shape()[1];
  Batch b;
  b.src = data;
  b.tgt = IndexArray::from_shape({B, L - 1});
  b.tgt_y = IndexArray::from_shape({B, L - 1});
  for (std::size_t r = 0; r < B; ++r)
    for (std::size_t t = 0; t + 1 < L; ++t) {
      b.tgt(r, t) = data(r, t);
      b.tgt_y(r, t) = data(r, t + 1);
      b.ntokens += data(r, t + 1) != pad;
    }
  b.src_mask = ops::padding_mask(b.src, pad);
  b.tgt_mask = ops::target_mask(b.tgt, pad);
  return b;
}

// data_gen: ids uniform in [1, V), column 0 set to the start symbol 1.
Batch random_batch(const Settings& s, Generator& gen) {
  IndexArray data = IndexArray::from_shape({std::size_t(s.batch_size), std::size_t(s.seq_len)});
  for (auto& id : data) id = gen.randint(1, s.vocab);
  for (std::size_t r = 0; r < data.shape()[0]; ++r) data(r, 0) = 1;
  return make_batch(data, /*pad=*/0);
}

// SimpleLossCompute: generator, then the criterion over (B * T, V), divided by the token count.
Tensor loss_of(nn::transformer::EncoderDecoder& model, nn::transformer::LabelSmoothing& criterion,
               const Batch& b) {
  const Tensor out = model.forward(b.src, b.tgt, b.src_mask, b.tgt_mask);
  const Tensor logp = model.generator->forward(out);  // (B, T, V)
  const auto V = static_cast<std::int64_t>(logp.shape()[2]);
  IndexArray flat_y = b.tgt_y;
  flat_y.reshape({b.tgt_y.size()});
  return criterion.forward(ops::reshape(logp, {-1, V}), flat_y) / static_cast<double>(b.ntokens);
}

// The training FLOPs per target token, counted as nanoGPT's estimate_mfu counts a GPT's: the
// multiply-adds of one forward pass through every matrix product (the attention's two included),
// times 2 (a multiply and an add) times 3 (backward does two products for each of forward's).
// Per row of a batch: the encoder reads S = seq_len source ids, the decoder T = seq_len - 1 ids,
// and the row predicts T target tokens. bench/copy_task_compare divides it by the machine's sgemm
// peak to get the model-FLOPs utilisation.
double flops_per_target_token(const Settings& s) {
  const double d = double(s.d_model), f = double(s.d_ff), V = double(s.vocab);
  const double S = double(s.seq_len), T = double(s.seq_len - 1);
  // An encoder layer: the q, k, v and output projections and the feed-forward, then Q K^T and P V.
  const double encoder = S * (4 * d * d + 2 * d * f) + 2 * S * S * d;
  // A decoder layer: the same on the T target positions, and the source attention: its q and
  // output projections on the target, k and v on the memory (the encoder's output, S positions).
  const double self_and_ff = T * (4 * d * d + 2 * d * f) + 2 * T * T * d;
  const double source = T * 2 * d * d + S * 2 * d * d + 2 * T * S * d;
  const double generator = T * d * V;
  return 6.0 * (double(s.layers) * (encoder + self_and_ff + source) + generator) / T;
}

template <class Ids>
std::string ids_str(const Ids& ids) {
  std::ostringstream os;
  for (auto it = ids.begin(); it != ids.end(); ++it) os << (it == ids.begin() ? "" : " ") << *it;
  return os.str();
}

// ---- the flags ---------------------------------------------------------------------------------

// Upper bounds where a larger value could only exhaust memory or time: the tutorial's model is
// d-model 512, d-ff 2048, 6 layers, 8 heads; these allow 8 times each, and batches of up to 4096
// rows; the memory of a step is bounded as a whole by check_memory.
Settings parse_settings(int argc, char** argv) {
  using flags::integer_in;
  using flags::number_in;
  Settings s;
  CLI::App app("The Annotated Transformer's copy task: train, then greedy-decode 0 1 2 ... 9");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last wins
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.add_option("--epochs", s.epochs, "training epochs")->check(integer_in(1, 100'000));
  app.add_option("--batches", s.batches, "training batches per epoch")
      ->check(integer_in(1, 1'000'000));
  app.add_option("--eval-batches", s.eval_batches, "evaluation batches per epoch")
      ->check(integer_in(0, 1'000'000));
  app.add_option("--batch-size", s.batch_size, "rows per batch")->check(integer_in(1, 4096));
  app.add_option("--layers", s.layers, "encoder and decoder layers (N)")->check(integer_in(1, 48));
  app.add_option("--d-model", s.d_model, "model width (the tutorial: 512)")
      ->check(integer_in(1, 4096));
  app.add_option("--d-ff", s.d_ff, "feed-forward width (the tutorial: 2048)")
      ->check(integer_in(1, 16384));
  app.add_option("--heads", s.heads, "attention heads (must divide d-model)")
      ->check(integer_in(1, 64));
  app.add_option("--dropout", s.dropout, "dropout probability")->check(number_in(0, 1));
  app.add_option("--warmup", s.warmup, "Noam warm-up steps")->check(integer_in(1, 10'000'000));
  app.add_option("--base-lr", s.base_lr, "Adam's lr, scaled by the Noam factor")
      ->check(number_in(0, 100, flags::Ends::open_low));
  app.add_option("--smoothing", s.smoothing, "label smoothing")->check(number_in(0, 1));
  app.add_option("--seed", s.seed, "seed of the model's and the data's generators")
      ->check(flags::unsigned_integer());
  app.add_option("--threads", s.threads, "threads of tapegrad's kernels (GEMMs included)")
      ->check(integer_in(1, 256));
  app.add_option("--checkpoint", s.checkpoint,
                 "where to save the trained model (empty: do not save)");
  app.add_option("--source", s.source, "the sequence to decode after training (ids in [0, vocab))")
      ->expected(1, 1000)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(integer_in(0, s.vocab - 1));
  app.add_option("--start-symbol", s.start_symbol, "the first decoder input when decoding")
      ->check(integer_in(0, s.vocab - 1));
  app.add_flag("--expect-copy", s.expect_copy,
               "exit with status 1 unless the decode is an exact copy");
  examples::parse_flags(app, argc, argv);
  // The checkpoint's place is checked now, not after the training.
  const std::filesystem::path target(s.checkpoint), folder = target.parent_path();
  if (!s.checkpoint.empty() && std::filesystem::exists(target) &&
      !std::filesystem::is_regular_file(target))
    throw examples::FlagError("--checkpoint: '" + s.checkpoint +
                              "' is not a regular file; give a file name (or '' not to save)");
  if (!s.checkpoint.empty() && !folder.empty() && !std::filesystem::is_directory(folder))
    throw examples::FlagError("--checkpoint: the folder '" + folder.string() + "' does not exist");
  if (s.d_model % s.heads != 0)
    throw examples::FlagError("--heads: expected a divisor of --d-model (" +
                              std::to_string(s.d_model) + "), got " + std::to_string(s.heads));
  return s;
}

// About the bytes a training step holds: 16 per parameter (weight, gradient, Adam's two moments),
// 4 per activation the tape keeps (per position and layer about 40 of width d_model, 2 of width
// d_ff and 4 attention rows per head). A step over 8 GiB is refused with the figure.
void check_memory(const Settings& s) {
  const double d = double(s.d_model), f = double(s.d_ff), N = double(s.layers),
               L = double(s.seq_len), h = double(s.heads);
  const double parameters = N * (12 * d * d + 4 * d * f) + 2 * double(s.vocab) * d;
  const double activations = double(s.batch_size) * L * N * (40 * d + 2 * f + 4 * h * L);
  const double gib = (16 * parameters + 4 * activations) / double(1ull << 30);
  if (gib > 8)
    throw examples::FlagError(
        "--batch-size, --layers, --d-model, --d-ff: a training step would hold about " +
        std::to_string(int(gib)) + " GiB, more than the 8 GiB this program allows itself");
}

// An epoch: `batches` training steps, then the mean loss of `eval_batches` fresh batches (eval
// mode, no grad). Returns the training loss per token.
double train_epoch(nn::transformer::EncoderDecoder& model,
                   nn::transformer::LabelSmoothing& criterion, optim::Adam& opt,
                   optim::LambdaLR& sched, const Settings& s, Generator& data_gen,
                   std::int64_t epoch) {
  using clock = std::chrono::steady_clock;
  model.train();
  double total = 0.0, tokens = 0.0;
  const auto start = clock::now();
  const std::clock_t cpu_start = std::clock();
  for (std::int64_t i = 0; i < s.batches; ++i) {
    const Batch b = random_batch(s, data_gen);
    Tensor loss = loss_of(model, criterion, b);
    loss.backward();
    opt.step();
    opt.zero_grad();
    sched.step();
    total += double(loss.item()) * double(b.ntokens);
    tokens += double(b.ntokens);
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  const double cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;  // all threads
  const double train_loss = total / tokens;

  model.eval();
  double eval_total = 0.0, eval_tokens = 0.0;
  {
    autograd::NoGradGuard no_grad;
    for (std::int64_t i = 0; i < s.eval_batches; ++i) {
      const Batch b = random_batch(s, data_gen);
      eval_total += double(loss_of(model, criterion, b).item()) * double(b.ntokens);
      eval_tokens += double(b.ntokens);
    }
  }
  std::cout << "epoch " << std::setw(3) << epoch + 1 << " | train loss " << std::fixed
            << std::setprecision(4) << train_loss << " | eval loss "
            << (eval_tokens > 0 ? eval_total / eval_tokens : 0.0) << " | tokens/s "
            << std::setprecision(1) << tokens / seconds << " | cpu s " << std::setprecision(2)
            << cpu_seconds << " | lr " << std::scientific << std::setprecision(2)
            << sched.get_last_lr()[0] << std::defaultfloat << std::endl;
  return train_loss;
}

// The tutorial decodes with an all-true source mask, even though 0 is the padding id.
IndexArray decode(nn::transformer::EncoderDecoder& model, const Settings& s) {
  model.eval();
  const std::size_t L = s.source.size();
  IndexArray src = IndexArray::from_shape({1, L});
  std::copy(s.source.begin(), s.source.end(), src.begin());
  const Mask src_mask = xt::ones<bool>({std::size_t{1}, std::size_t{1}, L});
  return nn::transformer::greedy_decode(model, src, src_mask, static_cast<std::int64_t>(L),
                                        s.start_symbol);
}

// Saves the state dict under PyTorch's keys (F32, written atomically), then proves that the file
// holds the whole model: a fresh one (another seed) loads it and decodes exactly the same.
bool save_and_reload(nn::transformer::EncoderDecoder& model,
                     const nn::transformer::TransformerOptions& options, const Settings& s,
                     const IndexArray& decoded) {
  io::save(model, s.checkpoint);
  auto reloaded = nn::transformer::make_model(s.vocab, s.vocab, options,
                                              std::make_shared<Generator>(s.seed + 2));
  io::load(*reloaded, s.checkpoint);  // strict: every key and shape must match
  const bool same = decode(*reloaded, s) == decoded;
  std::cout << "saved " << s.checkpoint
            << (same ? "; a fresh model loaded from it decodes the same\n"
                     : "; ERROR: the reloaded model decodes differently\n");
  return same;
}

int run(int argc, char** argv) {
  tapegrad::keep_freed_memory(true);  // a training process reuses its freed buffers (memory.hpp)
  const Settings s = parse_settings(argc, argv);
  check_memory(s);
  set_num_threads(static_cast<int>(s.threads));  // tapegrad's pool; results do not depend on it
  auto model_gen = std::make_shared<Generator>(s.seed);
  Generator data_gen(s.seed + 1);
  const auto options = nn::transformer::TransformerOptions()
                           .N(s.layers)
                           .d_model(s.d_model)
                           .d_ff(s.d_ff)
                           .h(s.heads)
                           .dropout(s.dropout);
  auto model = nn::transformer::make_model(s.vocab, s.vocab, options, model_gen);
  nn::transformer::LabelSmoothing criterion(s.vocab, /*padding_idx=*/0, s.smoothing);
  optim::Adam opt(model->parameters(), optim::AdamOptions(s.base_lr).betas({0.9, 0.98}).eps(1e-9));
  optim::LambdaLR sched(
      opt, [&](std::int64_t step) { return optim::noam(step, s.d_model, 1.0, s.warmup); });

  std::size_t n_params = 0;
  for (const Parameter& p : model->parameters()) n_params += p.numel();
  std::cout << "copy task: V=" << s.vocab << " N=" << s.layers << " d_model=" << s.d_model
            << " d_ff=" << s.d_ff << " h=" << s.heads << " dropout=" << s.dropout << ", "
            << n_params << " parameters; " << s.epochs << " epochs x " << s.batches
            << " batches of " << s.batch_size << ", threads=" << s.threads << "; " << std::fixed
            << std::setprecision(3) << flops_per_target_token(s) / 1e6 << std::defaultfloat
            << " MFLOP per target token\n";

  double first_loss = 0.0, last_loss = 0.0;
  for (std::int64_t epoch = 0; epoch < s.epochs; ++epoch) {
    last_loss = train_epoch(*model, criterion, opt, sched, s, data_gen, epoch);
    if (epoch == 0) first_loss = last_loss;
  }
  const IndexArray decoded = decode(*model, s);
  const bool exact = std::equal(s.source.begin(), s.source.end(), decoded.begin(), decoded.end());
  std::cout << "source : " << ids_str(s.source) << "\ndecoded: " << ids_str(decoded)
            << (exact ? "  (exact copy)" : "  (not a copy)") << '\n';
  if (!s.checkpoint.empty() && !save_and_reload(*model, options, s, decoded)) return 1;
  const bool fell = last_loss < first_loss;
  if (!fell) std::cerr << "the loss did not fall: " << first_loss << " -> " << last_loss << '\n';
  return fell && (exact || !s.expect_copy) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("copy_task", [&] { return run(argc, argv); });
}
