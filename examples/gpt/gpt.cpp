// examples/gpt/gpt.cpp: train a small GPT on real text, character by character — nanoGPT's "baby
// GPT" (4 layers, 4 heads, width 128, context 64) on Debian's fortunes, or on any UTF-8 text.
//
//     gpt                                      # the baby GPT, 2,000 steps, a few minutes on one core
//     gpt --pos rope --norm rmsnorm --mlp swiglu   # LLaMA's pieces in the same block
//     gpt --data shakespeare.txt --out run2    # your own text
//     gpt --resume                             # continue an interrupted run, bit for bit
//     mpirun -np 2 gpt                         # data-parallel on 2 processes, 12 windows each
//     gpt --init-from gpt2 --data my.txt --block-size 256 --batch-size 4 --grad-accum 2 --lr 3e-5
//                                              # fine-tune OpenAI's GPT-2 (a Hugging Face folder)
//     gpt ... --export-hf my-gpt2             # and write the result in Hugging Face's layout
//
// The recipe (nanoGPT's train.py): random windows of the training text (tapegrad::data), the mean
// cross-entropy of every next character, AdamW (betas 0.9, 0.99; weight decay 0.1 on the matrices
// only, GPT::parameter_groups), gradients clipped to norm 1, the learning rate warmed up linearly
// for 100 steps, then cosine-decayed from 1e-3 to 1e-4 (optim::cosine_with_warmup). Every
// --eval-every steps it measures the loss on a fixed set of validation windows and writes the
// checkpoint (OUT/last.safetensors, and OUT/best.safetensors when the validation loss is lower than
// the one best.safetensors holds, from this run or an earlier one): model, optimizer, schedule,
// generators and history, so --resume continues exactly. At the end: the loss picture and the
// attention heatmaps (gnuplot), a sample of generated text and one line "gpt result: ..." for
// bench/gpt_compare.
//
// --init-from DIR starts from a Hugging Face GPT-2 folder instead of random weights: its sizes
// (config.json), weights (model.safetensors) and tokenizer (vocab.json, merges.txt) replace the
// model flags and --tokenizer, which are refused beside it; --block-size then sets the training
// windows, at most the model's n_positions (the default). --grad-accum K makes each step the mean
// gradient of K batches of --batch-size windows, for a batch that does not fit in memory at once.
// --export-hf DIR writes the final model in Hugging Face's layout when training ends (checked at
// the start: GPT-2's choices, and DIR new or empty; written beside DIR and renamed into place).
//
// One run per folder: --out and --export-hf are locked for the whole run, and no file the run
// writes may be one it reads. The first Ctrl-C (or SIGTERM) lets the current step finish, saves
// it and exits 130 (143); a token file that shrinks under the run stops it the same way, exit 2.
//
// main() reads as train.py does, one named step after another: the flags, the data, the model and
// its optimizer, the checkpoint to resume, the training loop, what the run shows.
//
// On several processes (`mpirun -np N gpt ...`, when tapegrad was built with MPI): every rank
// holds the whole model and trains on its own --batch-size windows of each step's N * B, which
// all ranks draw alike from the shared data generator (rank r takes windows r*B .. r*B + B - 1);
// distributed::DistributedDataParallel averages the gradients during backward, so every rank
// takes the same optimizer step. Rank 0 alone prints (to standard output: every rank's warnings
// and errors still reach standard error), validates and writes the checkpoints; the
// checkpoint holds nothing about the number of ranks, so --resume continues on any number of
// them (with N' ranks, each step then trains on N' * B windows).
//
// Exit status: 0 when the validation loss fell below its value before training, 1 otherwise;
// 2 for bad flags, data or files, with one line saying which (examples/common/checked_main.hpp);
// 130 or 143 when stopped by SIGINT or SIGTERM, after saving.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>
#ifdef TAPEGRAD_GPT_MPI
#include <tapegrad/distributed.hpp>
#endif

#include "../common/checked_main.hpp"
#include "../common/flag_checks.hpp"
#include "../common/gnuplot.hpp"
#include "../common/staged_folder.hpp"
#include "../common/stop_signals.hpp"
#include "model_notes.hpp"
#include "model_size.hpp"
#include "run_files.hpp"
#include "run_folder.hpp"
#include "text_files.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;
namespace fs = std::filesystem;

namespace {

// ---- the settings ------------------------------------------------------------------------------

struct Settings {
  std::vector<std::string> data;
  std::string data_format;  ///< --data-format fortunes|text; "" = the files' own (load_text_files)
  std::string tokens;       ///< --tokens FILE: a token file instead of --data
  std::int64_t steps = 2000, batch_size = 12, block_size = 64, n_layer = 4, n_head = 4,
               n_embd = 128;
  std::int64_t warmup = 100, eval_every = 250, eval_windows = 480, threads = 1, stop_after = 0;
  std::int64_t sample_tokens = 500;
  double lr = 1e-3, min_lr = 1e-4, beta1 = 0.9, beta2 = 0.99, weight_decay = 0.1, clip = 1.0,
         dropout = 0.0;
  double val_fraction = 0.1;
  std::uint64_t seed = 0, split_seed = 0;
  std::string pos = "learned", norm = "layernorm", mlp = "gelu", gelu = "none", out = "gpt_out";
  std::string tokenizer = "char";  ///< char, bpe:N or gpt2:DIR
  std::string init_from;           ///< --init-from DIR: a Hugging Face GPT-2 folder
  std::string export_hf;           ///< --export-hf DIR
  std::int64_t grad_accum = 1;     ///< micro-batches per step
  bool bf16 = false;               ///< --bf16: the matrix products in bfloat16 (autocast)
  std::int64_t profile = 0;        ///< --profile N: the profiler's table of N training steps
  bool resume = false, quiet = false, check_in_sync = false;
};

using flags::Ends;
using flags::integer_in;
using flags::number_in;
using gpt::Limits;

void add_model_flags(CLI::App& app, Settings& s) {
  app.add_option("--tokenizer", s.tokenizer,
                 "what a token is: char (a character of the training text), bpe:N (a byte pair "
                 "encoding of N tokens trained on the training text, split as GPT-2 splits), "
                 "bpe-model:FILE (a BPE saved by tokenize --train-bpe), or gpt2:DIR (GPT-2's, "
                 "from DIR's encoder.json and vocab.bpe)");
  app.add_option("--block-size", s.block_size, "context length in tokens")
      ->check(integer_in(1, Limits::kMaxBlockSize));
  app.add_option("--n-layer", s.n_layer, "Transformer blocks")
      ->check(integer_in(1, Limits::kMaxLayers));
  app.add_option("--n-head", s.n_head, "attention heads (must divide --n-embd)")
      ->check(integer_in(1, Limits::kMaxHeads));
  app.add_option("--n-embd", s.n_embd, "model width")->check(integer_in(1, Limits::kMaxWidth));
  app.add_option("--dropout", s.dropout, "dropout probability")->check(number_in(0, 1));
  app.add_option("--pos", s.pos,
                 "positions: learned (GPT-2), sinusoidal, rope (rotary, LLaMA), none, alibi "
                 "(a bias on the scores, examples/gpt/alibi.hpp)")
      ->check(flags::one_of({"learned", "sinusoidal", "rope", "none", "alibi"}));
  app.add_option("--norm", s.norm, "the blocks' norm: layernorm (GPT-2) or rmsnorm (LLaMA)")
      ->check(flags::one_of({"layernorm", "rmsnorm"}));
  app.add_option("--mlp", s.mlp,
                 "the blocks' MLP: gelu (GPT-2), relu_squared (Primer) or swiglu (LLaMA)")
      ->check(flags::one_of({"gelu", "relu_squared", "swiglu"}));
  app.add_option("--gelu", s.gelu, "GELU form of --mlp gelu")
      ->check(flags::one_of({"none", "tanh"}));
}

// The upper bounds stop values that could only exhaust memory or time; the memory a step needs
// is bounded as a whole once the model's sizes are known (model_size.hpp).
void add_training_flags(CLI::App& app, Settings& s) {
  app.add_option("--steps", s.steps, "training steps (the schedule decays over them)")
      ->check(integer_in(1, 10'000'000));
  app.add_option("--batch-size", s.batch_size, "windows per step (per rank under mpirun)")
      ->check(integer_in(1, 65536));
  app.add_option("--lr", s.lr, "peak learning rate, after the warm-up")
      ->check(number_in(0, 10, Ends::open_low));
  app.add_option("--min-lr", s.min_lr, "learning rate at the end of the cosine decay (<= --lr)")
      ->check(number_in(0, 10));
  app.add_option("--warmup", s.warmup, "linear warm-up steps (at most --steps - 1 are used)")
      ->check(integer_in(0, 10'000'000));
  app.add_option("--beta1", s.beta1, "AdamW beta1")->check(number_in(0, 1, Ends::open_high));
  app.add_option("--beta2", s.beta2, "AdamW beta2")->check(number_in(0, 1, Ends::open_high));
  app.add_option("--weight-decay", s.weight_decay, "AdamW decoupled weight decay of the matrices")
      ->check(number_in(0, 100));
  app.add_option("--grad-accum", s.grad_accum,
                 "micro-batches per step: the step's gradient is the mean over K batches of "
                 "--batch-size windows")
      ->check(integer_in(1, 1024));
  app.add_flag("--bf16", s.bf16,
               "mixed precision: the matrix products take bfloat16 operands and sum in float32, "
               "as torch.autocast(\"cpu\", dtype=torch.bfloat16); weights, gradients and AdamW "
               "stay float32 (docs/bf16.md)");
  app.add_option("--clip", s.clip, "gradient clipping norm (0: none)")->check(number_in(0, 1e6));
  app.add_option("--seed", s.seed, "seed of the initial weights, dropout and batches")
      ->check(flags::unsigned_integer());
  app.add_option("--threads", s.threads,
                 "threads of tapegrad's kernels (results do not depend on it)")
      ->check(integer_in(1, 256));
}

void add_run_flags(CLI::App& app, Settings& s) {
  app.add_option("--data", s.data,
                 "UTF-8 text files (default: every fortune file in /usr/share/games/fortunes)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--data-format", s.data_format,
                 "how --data is read: fortunes (entries between lines holding only %, or "
                 "paragraphs in a file without such lines; split by whole entries, each followed "
                 "by a % line) or text (the files as one stream, as cat gives them: the first "
                 "1 - --val-fraction of the characters train, the rest validate; nothing added). "
                 "Default: fortunes for fortune files (a line that is exactly %), text for others")
      ->check(flags::one_of({"fortunes", "text"}));
  app.add_option("--tokens", s.tokens,
                 "a token file (tokenize --gpt2 DIR --text FILE --out FILE.tokens) to train on "
                 "instead of --data, read a window at a time: its last --val-fraction of ids "
                 "validate; needs --tokenizer gpt2:DIR or bpe-model:FILE");
  app.add_option("--val-fraction", s.val_fraction,
                 "share held out for validation: of the entries (fortunes), of the characters "
                 "(text) or of the ids (--tokens)")
      ->check(number_in(0, 1, Ends::open));
  app.add_option("--split-seed", s.split_seed,
                 "seed of the train/validation split and the validation windows")
      ->check(flags::unsigned_integer());
  app.add_option("--eval-every", s.eval_every,
                 "steps between validations and checkpoints (default: 250, or --steps / 8 for "
                 "shorter runs, so that the curve has points)")
      ->check(integer_in(1, 10'000'000));
  app.add_option("--eval-windows", s.eval_windows, "fixed validation windows")
      ->check(integer_in(1, 100'000));
  app.add_option("--out", s.out,
                 "folder for checkpoints, data files and pictures (one run at a time: it is "
                 "locked for the run)");
  app.add_option("--init-from", s.init_from,
                 "start from the Hugging Face GPT-2 in DIR (config.json, model.safetensors, "
                 "vocab.json, merges.txt): its sizes, weights and tokenizer");
  app.add_option("--export-hf", s.export_hf,
                 "when training ends, write the model to DIR in Hugging Face's layout (GPT-2's "
                 "choices only: --pos learned --norm layernorm --mlp gelu); DIR new or empty, "
                 "locked for the run, filled whole at the end");
  app.add_flag("--resume", s.resume, "continue from OUT/last.safetensors");
  app.add_option("--stop-after", s.stop_after,
                 "stop after this step (checkpoint saved), to --resume later")
      ->check(integer_in(0, 10'000'000));
  app.add_option("--sample-tokens", s.sample_tokens, "tokens to generate at the end")
      ->check(integer_in(0, 100'000));
  app.add_flag("--quiet", s.quiet, "no progress lines");
  app.add_option("--profile", s.profile,
                 "print the profiler's table of this many training steps, taken after 10 "
                 "warm-up steps: each op's forward and backward time, the products' GFLOP/s, "
                 "[bf16] on the products run in bfloat16 (docs/engine.md#the-profiler)")
      ->check(integer_in(1, 10'000'000));
  app.add_flag(
      "--check-in-sync", s.check_in_sync,
      "under mpirun: after every backward, check that every rank holds the same bits (slower)");
}

// The flags, checked one by one and then together; a warm-up longer than the run is clamped.
Settings parse_settings(int argc, char** argv) {
  Settings s;
  CLI::App app(
      "Train a small GPT on real text, one character at a time (nanoGPT's baby GPT on Debian's "
      "fortunes)");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last wins
  add_model_flags(app, s);
  add_training_flags(app, s);
  add_run_flags(app, s);
  examples::parse_flags(app, argc, argv);
  if (!s.init_from.empty()) {  // the folder gives the model and its tokenizer
    for (const char* flag :
         {"--tokenizer", "--n-layer", "--n-head", "--n-embd", "--pos", "--norm", "--mlp", "--gelu"})
      if (app.get_option(flag)->count() > 0)
        throw examples::FlagError(std::string(flag) + " does not go with --init-from: the model " +
                                  "and its tokenizer come from " + s.init_from);
    s.tokenizer = "gpt2:" + s.init_from;
    s.block_size =
        app.get_option("--block-size")->count() > 0 ? s.block_size : 0;  // 0: n_positions
  }
  const auto tokenizer_is = [&](const char* kind) { return s.tokenizer.rfind(kind, 0) == 0; };
  if (s.tokenizer != "char" && !tokenizer_is("gpt2:") && !tokenizer_is("bpe-model:")) {
    std::int64_t n = 0;
    if (!tokenizer_is("bpe:") || !flags::parse_integer(s.tokenizer.substr(4), n) || n < 257 ||
        n > 65536)
      throw examples::FlagError(
          "--tokenizer: expected char, bpe:N with N in [257, 65536], bpe-model:FILE or gpt2:DIR, "
          "got '" +
          s.tokenizer + "'");
  }
  if (!s.tokens.empty() && !s.data.empty())
    throw examples::FlagError("--tokens and --data do not go together: train on one of them");
  if (!s.tokens.empty() && !tokenizer_is("gpt2:") && !tokenizer_is("bpe-model:"))
    throw examples::FlagError(
        "--tokens needs --tokenizer gpt2:DIR or bpe-model:FILE, the tokenizer that wrote it (the "
        "checkpoint keeps it, to sample)");
  if (s.min_lr > s.lr)
    throw examples::FlagError("--min-lr: expected at most --lr (" + flags::number_text(s.lr) +
                              "), got " + flags::number_text(s.min_lr));
  if (s.n_embd % s.n_head != 0)
    throw examples::FlagError("--n-head: expected a divisor of --n-embd (" +
                              std::to_string(s.n_embd) + "), got " + std::to_string(s.n_head));
  if (s.pos == "rope" && (s.n_embd / s.n_head) % 2 != 0)
    throw examples::FlagError("--pos rope: expected an even head size --n-embd / --n-head, got " +
                              std::to_string(s.n_embd / s.n_head));
  if (s.mlp != "gelu" && s.gelu != "none")
    throw examples::FlagError("--gelu: it chooses the GELU of --mlp gelu; --mlp " + s.mlp +
                              " has none");
  if (s.warmup >= s.steps) {
    std::cout << "note: --warmup " << s.warmup << " is not shorter than the run (--steps "
              << s.steps << "): the learning rate warms up over " << s.steps - 1
              << " steps and reaches --lr at the last one\n";
    s.warmup = s.steps - 1;
  }
  if (app.get_option("--eval-every")->count() == 0)
    s.eval_every = std::clamp<std::int64_t>(s.steps / 8, 1, s.eval_every);
  return s;
}

// ---- the data ----------------------------------------------------------------------------------

// A stream of token ids: in memory (encoded from text), or a stretch of a token file read a
// window at a time, so that a corpus of gigabytes costs no memory of its own.
struct Tokens {
  std::vector<std::int64_t> ids;
  std::shared_ptr<const data::TokenFile> file;
  std::size_t begin = 0, count = 0;  // the stretch of `file`
  std::size_t size() const { return file ? count : ids.size(); }
  data::Batch windows(const std::vector<std::size_t>& starts, std::size_t T) const {
    return file ? data::windows(*file, begin, count, starts, T) : data::windows(ids, starts, T);
  }
};

struct TextData {
  std::vector<std::string> files;
  data::Split split;        // --data-format fortunes: the entries on each side
  std::u32string val_text;  // the validation text (the attention heatmaps read a line of it)
  data::Tokenizer tokenizer{data::Vocabulary()};
  Tokens train_ids, val_ids;
  std::size_t train_bytes = 0, val_bytes = 0;  // of UTF-8 text
  std::vector<std::size_t> val_starts;         // the fixed validation windows
};

// The tokenizer of --tokenizer: the training text's characters, a BPE trained on the training
// text (never the validation text, which would leak into the tokens), a BPE saved before, or
// GPT-2's.
data::Tokenizer make_tokenizer(const Settings& s, const std::u32string& train_text,
                               const std::string& train_utf8) {
  if (s.tokenizer == "char") return data::Tokenizer(data::Vocabulary(train_text));
  try {
    if (s.tokenizer.rfind("gpt2:", 0) == 0)
      return data::Tokenizer(data::GPT2Tokenizer::load(s.tokenizer.substr(5)));
    if (s.tokenizer.rfind("bpe-model:", 0) == 0) {
      const std::string path = s.tokenizer.substr(10);
      std::error_code ec;
      if (!fs::is_regular_file(path, ec))  // (a FIFO would block the read for ever)
        throw DataError("'" + path +
                        "' is not a regular file (a BPE saved by tokenize --train-bpe)");
      return data::Tokenizer(data::BytePairEncoding::load(path));
    }
  } catch (const DataError& e) {
    throw DataError(std::string("--tokenizer: ") + e.what());
  }
  const std::size_t n = std::stoul(s.tokenizer.substr(4));  // checked by parse_settings
  data::BytePairEncoding bpe =
      data::BytePairEncoding::train(train_utf8, n, data::Pretokenizer::gpt2);
  if (bpe.vocab_size() < n)
    std::cout << "note: --tokenizer " << s.tokenizer << ": the training text has no pair left to "
              << "merge after " << bpe.merges().size() << " merges (every word is one token): the "
              << "BPE has " << bpe.vocab_size() << " tokens\n";
  return data::Tokenizer(std::move(bpe));
}

// --tokens: a token file, checked whole before training (its header, its size, its tokenizer,
// every id), split by position: the last --val-fraction of its ids validate (as nanoGPT's val.bin
// does). A file too short for a window is named with its size, before --block-size is blamed.
TextData load_token_file(const Settings& s) {
  if (!s.data_format.empty())
    throw examples::FlagError("--data-format " + s.data_format +
                              " does not go with --tokens: a token file is one stream of ids "
                              "already, whose last --val-fraction validates");
  TextData d;
  d.files = {s.tokens};
  d.tokenizer = make_tokenizer(s, U"", "");
  const auto file = std::make_shared<const data::TokenFile>(data::TokenFile::open(s.tokens));
  try {
    const std::string warning =
        data::check_token_file_tokenizer(*file, d.tokenizer, "--tokenizer " + s.tokenizer);
    if (!warning.empty()) std::cerr << "gpt: warning: --tokens: " << warning << "\n";
  } catch (const DataError& e) {
    throw DataError(std::string("--tokens: ") + e.what());
  }
  file->check_ids();
  const auto T = std::size_t(s.block_size);
  const auto val = std::size_t(double(file->size()) * s.val_fraction);
  if (file->size() - val <= T || val <= T)
    throw DataError("--tokens: '" + s.tokens + "' holds " + std::to_string(file->size()) + " ids" +
                    (file->size() == 0 ? " (the file is empty)" : "") + ", " +
                    std::to_string(file->size() - val) + " for training and " +
                    std::to_string(val) + " for validation (--val-fraction " +
                    flags::number_text(s.val_fraction) + "); each needs more than one window of " +
                    "--block-size " + std::to_string(T) + " + 1 ids");
  d.train_ids = {{}, file, 0, file->size() - val};
  d.val_ids = {{}, file, file->size() - val, val};
  return d;
}

// --data-format, or the files' own form when it is not given: fortunes for Debian's fortunes
// (no --data) and for files that are all fortune files (a line that is exactly "%", strfile's
// separator), text for files none of which is. Files of both kinds are refused: the flag decides.
std::string data_format_of(const Settings& s, const std::vector<std::string>& files) {
  if (!s.data_format.empty()) return s.data_format;
  if (s.data.empty()) return "fortunes";
  std::string fortune, text;  // the first file of each kind
  for (const std::string& f : files) {
    std::string& kind = data::is_fortune_file(f) ? fortune : text;
    if (kind.empty()) kind = f;
  }
  if (!fortune.empty() && !text.empty())
    throw DataError("--data: '" + fortune + "' is a fortune file (a line holding only %) and '" +
                    text +
                    "' is not; give --data-format fortunes (entries between % lines, or "
                    "paragraphs in a file without them) or --data-format text (the files as one "
                    "stream)");
  return fortune.empty() ? "text" : "fortunes";
}

// The files as --data-format says (its default resolved here, into `s`: the header line and the
// sample's prompt read it): fortunes, entries (each followed by a "%" line) split by whole
// entries into training and validation text; or text, one stream whose first 1 - --val-fraction
// of characters train (nanoGPT's split). Then the tokenizer and the tokens.
TextData load_text_files(Settings& s) {
  TextData d;
  d.files = s.data.empty() ? data::fortune_files() : s.data;
  if (d.files.empty())
    throw DataError(std::string("no text: ") + data::kFortunesDir +
                    " has no fortune files; install Debian's fortunes (scripts/setup.sh does) or "
                    "give --data FILE...");
  gpt::check_text_files(d.files);  // (regular files, of a bounded size: before any is read)
  s.data_format = data_format_of(s, d.files);
  std::u32string train_text;
  if (s.data_format == "text") {
    data::TextSplit split = data::split_text(data::read_text(d.files), s.val_fraction);
    train_text = std::move(split.train);
    d.val_text = std::move(split.val);
  } else {
    const std::vector<std::u32string> entries = data::read_entries(d.files);
    if (entries.size() < 2)
      throw DataError(
          "--data: expected text of at least 2 entries (separated by '%' lines or "
          "blank lines), got " +
          std::to_string(entries.size()) + "; --data-format text reads the files as one stream");
    d.split = data::split_entries(entries, s.val_fraction, s.split_seed);
    train_text = data::join_entries(d.split.train);
    d.val_text = data::join_entries(d.split.val);
  }
  const std::string train_utf8 = data::encode_utf8(train_text),
                    val_utf8 = data::encode_utf8(d.val_text);
  d.train_bytes = train_utf8.size();
  d.val_bytes = val_utf8.size();
  d.tokenizer = make_tokenizer(s, train_text, train_utf8);
  d.train_ids.ids = d.tokenizer.encode(train_utf8, "the training text");
  d.val_ids.ids = d.tokenizer.encode(val_utf8, "the validation text");
  return d;
}

// The tokens of --tokens or of the text files, and the fixed validation windows. A text too short
// for a window names the files it came from.
TextData load_text(Settings& s) {
  TextData d = s.tokens.empty() ? load_text_files(s) : load_token_file(s);
  const auto T = std::size_t(s.block_size);
  if (d.train_ids.size() <= T || d.val_ids.size() <= T)
    throw DataError("--data: " +
                    (d.files.size() == 1
                         ? "'" + d.files[0] + "'"
                         : std::to_string(d.files.size()) + " files ('" + d.files[0] + "', ...)") +
                    (d.files.size() == 1 ? " gives " : " give ") +
                    std::to_string(d.train_ids.size()) + " training and " +
                    std::to_string(d.val_ids.size()) + " validation tokens (--val-fraction " +
                    flags::number_text(s.val_fraction) + "); each needs more than one window of " +
                    "--block-size " + std::to_string(T) + " + 1 tokens: give more text, or a " +
                    "smaller --block-size");
  Generator window_gen(s.split_seed + 1);
  d.val_starts = data::random_starts(d.val_ids.size(), T, std::size_t(s.eval_windows), window_gen);
  return d;
}

// ---- the model, its optimizer and schedule, the checkpoint -------------------------------------

// --init-from: the folder's config and its weights, every check made (the library's: config.json
// field by field, each key and shape) before the data is read or a parameter allocated.
struct InitFrom {
  pretrained::GPT2Config config;
  pretrained::GPT2Weights weights;
};

// Opens --init-from's folder; the settings then describe its model (for the run's description
// and the pictures), and --block-size defaults to its n_positions.
std::optional<InitFrom> open_init_from(Settings& s) {
  if (s.init_from.empty()) return std::nullopt;
  const std::string weights = pretrained::gpt2_weights_path(s.init_from);
  const pretrained::GPT2Config c =
      pretrained::read_gpt2_config((fs::path(s.init_from) / "config.json").string());
  if (s.block_size == 0)
    s.block_size = std::min<std::int64_t>(c.n_positions, Limits::kMaxBlockSize);
  if (s.block_size > c.n_positions)
    throw examples::FlagError("--block-size " + std::to_string(s.block_size) +
                              ": expected at most the n_positions of " + s.init_from + " (" +
                              std::to_string(c.n_positions) + ")");
  const tt::GPTConfig g = c.gpt_config();
  s.n_layer = g.n_layer(), s.n_head = g.n_head(), s.n_embd = g.n_embd();
  s.pos = g.position(), s.norm = g.norm(), s.mlp = g.mlp(), s.gelu = g.gelu();
  return InitFrom{c, pretrained::GPT2Weights(weights, c)};
}

// --export-hf, checked before training: GPT-2's choices. The folder itself is checked and locked
// by open_export, on the process that writes it.
void check_export(const Settings& s) {
  if (s.export_hf.empty()) return;
  if (s.pos != "learned" || s.norm != "layernorm" || s.mlp != "gelu")
    throw examples::FlagError(
        "--export-hf: GPT-2's layout holds --pos learned --norm layernorm "
        "--mlp gelu only, got --pos " +
        s.pos + " --norm " + s.norm + " --mlp " + s.mlp);
}

// --export-hf's folder, taken at the start for the whole run: absent or empty (hours of training
// must not end in a refusal, nor overwrite another model's files), locked against a second run,
// and written whole at the end (examples/common/staged_folder.hpp).
std::unique_ptr<examples::StagedFolder> open_export(const Settings& s) {
  if (s.export_hf.empty()) return nullptr;
  if (io::same_file(s.export_hf, s.out) ||
      fs::path(s.export_hf).lexically_normal() == fs::path(s.out).lexically_normal())
    throw examples::FlagError("--export-hf: expected a folder other than --out ('" + s.out +
                              "'), which holds the checkpoints");
  return std::make_unique<examples::StagedFolder>(s.export_hf, "--export-hf");
}

// What the run reads: the text or token file, the tokenizer's files, --init-from's folder.
std::vector<io::NamedFile> run_inputs(const Settings& s) {
  std::vector<io::NamedFile> in;
  if (!s.tokens.empty()) in.push_back({"--tokens", s.tokens});
  for (const std::string& f : s.tokens.empty() && s.data.empty() ? data::fortune_files() : s.data)
    in.push_back({"--data", f});
  const auto folder_files = [&](const std::string& flag, const std::string& dir,
                                std::initializer_list<const char*> names) {
    in.push_back({flag, dir});
    for (const char* name : names) in.push_back({flag, (fs::path(dir) / name).string()});
  };
  if (!s.init_from.empty())
    folder_files("--init-from", s.init_from,
                 {"config.json", "model.safetensors", "vocab.json", "merges.txt"});
  else if (s.tokenizer.rfind("gpt2:", 0) == 0)
    folder_files("--tokenizer", s.tokenizer.substr(5),
                 {"encoder.json", "vocab.bpe", "vocab.json", "merges.txt"});
  if (s.tokenizer.rfind("bpe-model:", 0) == 0)
    in.push_back({"--tokenizer", s.tokenizer.substr(10)});
  return in;
}

// What the run writes into --out (the files there now: one that does not exist yet is no input)
// and the export's folder.
std::vector<io::NamedFile> run_outputs(const Settings& s) {
  std::vector<io::NamedFile> out;
  std::error_code ec;
  for (fs::directory_iterator it(s.out, ec), end; !ec && it != end; it.increment(ec)) {
    if (gpt::is_run_output(it->path().filename().string()))
      out.push_back({"--out", it->path().string()});
  }
  if (!s.export_hf.empty()) out.push_back({"--export-hf", s.export_hf});
  return out;
}

// An output never replaces an input: ValueError naming both. (--resume reads last.safetensors
// and replaces it: that file is the run's own, not an input here.)
void check_no_output_replaces_an_input(const Settings& s) {
  io::check_outputs_spare_inputs(run_outputs(s), run_inputs(s));
}

tt::GPTConfig model_config(const Settings& s, const data::Tokenizer& tokenizer,
                           const std::optional<InitFrom>& init) {
  if (init) {
    if (tokenizer.vocab_size() != init->config.vocab_size)
      throw DataError("--init-from " + s.init_from + ": its tokenizer has " +
                      std::to_string(tokenizer.vocab_size()) +
                      " tokens, config.json's vocab_size is " +
                      std::to_string(init->config.vocab_size));
    return init->config.gpt_config(s.dropout);
  }
  tt::GPTConfig c = tt::GPTConfig(tokenizer.vocab_size(), s.block_size)
                        .n_layer(s.n_layer)
                        .n_head(s.n_head)
                        .n_embd(s.n_embd)
                        .dropout(s.dropout)
                        .norm(s.norm)
                        .mlp(s.mlp)
                        .gelu(s.gelu);
  return gpt::with_position(c, s.pos);
}

// Everything a training step changes, which the checkpoint saves. Built in place (the optimizer
// holds the model's parameters, the checkpoint holds references to all of them).
struct Trainer {
  Trainer(const Settings& s, const tt::GPTConfig& config)
      : model_gen(std::make_shared<Generator>(s.seed)),
        data_gen(std::make_shared<Generator>(s.seed + 1)),
        model(config, model_gen),
        opt(optimizer_groups(s, model)),
        sched(opt, schedule(s)),
        ckpt(model, opt, &sched) {
    ckpt.add_generator("model", model_gen).add_generator("data", data_gen);
  }
  // nanoGPT's AdamW: weight decay on the matrices only.
  static std::vector<optim::AdamW::Group> optimizer_groups(const Settings& s, tt::GPT& model) {
    const auto adamw =
        optim::AdamWOptions(s.lr).betas({s.beta1, s.beta2}).weight_decay(s.weight_decay);
    const tt::ParameterGroups groups = model.parameter_groups();
    return {{groups.decay, adamw}, {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}};
  }
  static optim::LambdaLR::LrLambda schedule(const Settings& s) {
    const double min_ratio = s.min_lr / s.lr;
    return [=, warmup = s.warmup, steps = s.steps](std::int64_t e) {
      return optim::cosine_with_warmup(e, warmup, steps, min_ratio);
    };
  }

  std::shared_ptr<Generator> model_gen, data_gen;
  tt::GPT model;
  optim::AdamW opt;
  optim::LambdaLR sched;
  io::TrainingCheckpoint ckpt;
#ifdef TAPEGRAD_GPT_MPI
  distributed::DistributedDataParallel* ddp = nullptr;  // under mpirun: held back with --grad-accum
#endif
};

// The trainer, its memory bounded first; with --init-from its weights read from the folder.
std::unique_ptr<Trainer> build_trainer(const Settings& s, const tt::GPTConfig& config,
                                       const std::optional<InitFrom>& init) {
  tt::validate(config);
  gpt::check_parameter_count(
      config, init ? "--init-from " + s.init_from : "--n-layer, --n-embd and the vocabulary");
  tt::GPTConfig windows = config;  // what a step holds: windows of --block-size tokens
  windows.block_size(s.block_size);
  gpt::check_training_memory(windows, s.batch_size);
  if (!init) return std::make_unique<Trainer>(s, config);
  std::unique_ptr<Trainer> t;
  {
    nn::SkipInitGuard skip;  // every weight is read from the folder just below
    t = std::make_unique<Trainer>(s, config);
  }
  init->weights.read_into(t->model);
  return t;
}

// ---- the run's record: what the checkpoint adds to the trainer's state -------------------------

struct RunRecord {
  std::int64_t step = 0;  // steps done
  std::vector<float> train_losses;
  std::vector<std::pair<std::int64_t, float>> val_history;
  double best_val = INFINITY;  // the validation loss best.safetensors holds
  std::vector<float> step_seconds;
  double train_seconds = 0.0;
  double val_bits_per_byte = NAN;  // at the last validation
  std::int64_t saved_step = -1;    // the step last.safetensors holds, when this run knows it
};

void save(Trainer& t, RunRecord& run, const std::map<std::string, std::string>& notes,
          const gpt::RunFolder& folder, bool best) {
  std::map<std::string, std::string> extra = notes;
  extra["history.train"] = gpt::floats_text(run.train_losses);
  std::vector<float> v;
  for (const auto& [at, loss] : run.val_history) v.push_back(float(at)), v.push_back(loss);
  extra["history.val"] = gpt::floats_text(v);
  extra["best_val"] = gpt::best_val_text(run.best_val);
  t.ckpt.save(folder.last.string(), {run.step, run.step, extra});
  if (best) t.ckpt.save(folder.best.string(), {run.step, run.step, extra});
  run.saved_step = run.step;
}

// --resume: the trainer's state and the run's record from OUT/last.safetensors, every part
// checked: the notes must describe this model, the history must fit the step.
void resume(Trainer& t, RunRecord& run, const std::map<std::string, std::string>& notes,
            const fs::path& path) {
  const std::string p = path.string();
  const io::SafetensorsFile f = io::load_safetensors(p);
  for (const auto& [key, value] : notes)
    if (gpt::note_or_default(f, key, p) != value)
      throw ValueError("--resume: the run in '" + p + "' was made with another " + key.substr(4) +
                       (key == "gpt.vocab" ? " (other text or another tokenizer)" : "") +
                       "; start it again without --resume, or with another --out");
  run.step = run.saved_step = t.ckpt.restore(f, p).step;
  run.train_losses = gpt::floats_from(gpt::note(f, "history.train", p), "'" + p + "': history");
  if (std::int64_t(run.train_losses.size()) != run.step)
    throw CheckpointError("'" + p + "': the note 'history.train' holds " +
                              std::to_string(run.train_losses.size()) + " losses for " +
                              std::to_string(run.step) + " steps",
                          "InvalidCheckpoint");
  run.val_history = gpt::val_history_from(gpt::note(f, "history.val", p), run.step, p);
  // The best loss is what the history shows (and best.safetensors holds, already in run.best_val):
  // the note must read as a loss, but an edited one cannot stop best.safetensors from updating.
  gpt::best_val_from(gpt::note(f, "best_val", p), p);
  for (std::size_t i = 1; i < run.val_history.size(); ++i)  // (step 0's is no candidate)
    run.best_val = std::min(run.best_val, double(run.val_history[i].second));
}

// ---- the training loop -------------------------------------------------------------------------

// The loss on the fixed validation windows, in nats per token and in bits per byte: the second
// compares models whose tokens differ (a BPE token holds several characters).
struct ValidationLoss {
  double nats_per_token = 0.0, bits_per_byte = 0.0;
};

// The loss over the fixed validation windows (every target but <unk>), eval mode.
ValidationLoss validation_loss(tt::GPT& model, const TextData& d, std::size_t B, std::size_t T) {
  autograd::NoGradGuard no_grad;
  model.eval();
  const std::int64_t ignore = d.tokenizer.ignore_index();
  double total = 0.0;
  std::size_t count = 0, bytes = 0;
  const auto& starts = d.val_starts;
  for (std::size_t i = 0; i < starts.size(); i += B) {
    const std::vector<std::size_t> chunk(
        starts.begin() + std::ptrdiff_t(i),
        starts.begin() + std::ptrdiff_t(std::min(i + B, starts.size())));
    const data::Batch b = d.val_ids.windows(chunk, T);
    IndexArray y = b.y;
    y.reshape({y.size()});
    const Tensor logits = ops::reshape(model.forward(b.x), {-1, model.config().vocab_size()});
    const auto options = ops::CrossEntropyOptions().ignore_index(ignore).reduction("sum");
    total += ops::cross_entropy(logits, y, options).item();
    for (std::int64_t id : y)
      if (id != ignore) ++count, bytes += d.tokenizer.bytes_of(id);
  }
  model.train();
  if (count == 0) return {};
  return {total / double(count), total / std::log(2.0) / double(bytes)};
}

// Where and how the program speaks: rank 0 alone; lines rewritten in place (\r, ESC[K) only on a
// terminal, plain lines in a log, a pipe or under mpirun.
struct Console {
  int rank = 0, world = 1;
  bool in_place = false, quiet = false;
  std::string clear_line() const { return in_place ? "\r\x1b[K" : ""; }
};

// A step's batches, all read before the step changes anything: a token file that shrank or
// changed under the run (data::windows throws DataError naming it) stops the run before the
// step, never halfway through it. Every rank draws the step's B * world windows of each
// micro-batch alike and reads its own B of them.
std::vector<data::Batch> read_batches(Trainer& t, const TextData& d, const Settings& s,
                                      const Console& con) {
  const std::size_t T = std::size_t(s.block_size), B = std::size_t(s.batch_size);
  std::vector<data::Batch> batches;
  for (std::int64_t k = 0; k < s.grad_accum; ++k) {
    const std::vector<std::size_t> starts =
        data::random_starts(d.train_ids.size(), T, B * std::size_t(con.world), *t.data_gen);
    const std::vector<std::size_t> mine(
        starts.begin() + std::ptrdiff_t(std::size_t(con.rank) * B),
        starts.begin() + std::ptrdiff_t(std::size_t(con.rank + 1) * B));
    batches.push_back(d.train_ids.windows(mine, T));
  }
  return batches;
}

// One training step on this rank's batches: --grad-accum micro-batches, each backward adding its
// share of the gradient (loss / K), then one optimizer step. Returns the loss of the whole step.
double train_step(Trainer& t, const std::vector<data::Batch>& batches, const TextData& d,
                  const Settings& s, const Console& con) {
  const auto K = std::int64_t(batches.size());
  double step_loss = 0.0;
  for (std::int64_t k = 0; k < K; ++k) {
    const data::Batch& b = batches[std::size_t(k)];
    std::optional<autocast::bf16> mixed;  // --bf16: forward and backward's products
    if (s.bf16) mixed.emplace();
    const Tensor loss = t.model.loss(b.x, b.y, d.tokenizer.ignore_index());
#ifdef TAPEGRAD_GPT_MPI
    // Under mpirun the gradients are averaged over the ranks once, in the last backward.
    std::optional<distributed::DistributedDataParallel::NoSync> hold;
    if (t.ddp && k + 1 < K) hold.emplace(*t.ddp);
#endif
    (K == 1 ? loss : loss * (1.0 / double(K))).backward();
    step_loss += loss.item() / double(K);
  }
  if (s.clip > 0) optim::clip_grad_norm_(t.model.parameters(), s.clip);
  t.opt.step();
  t.opt.zero_grad();
  t.sched.step();
#ifdef TAPEGRAD_GPT_MPI
  if (con.world > 1) step_loss = distributed::all_reduce(step_loss, distributed::ReduceOp::average);
#else
  (void)con;
#endif
  return step_loss;
}

void show_progress(const RunRecord& run, const Settings& s, const Console& con, double lr) {
  const double per_step = run.train_seconds / double(run.step_seconds.size());
  const std::size_t tokens = std::size_t(s.batch_size * s.grad_accum * con.world * s.block_size);
  std::ostringstream line;
  line << "step " << std::setw(int(std::to_string(s.steps).size())) << run.step << "/" << s.steps
       << "  loss " << gpt::fixed(run.train_losses.back(), 4) << "  " << std::setw(7)
       << std::int64_t(double(tokens) / per_step) << " tokens/s  lr " << std::scientific
       << std::setprecision(2) << lr << std::defaultfloat << "  ETA "
       << gpt::duration(per_step * double(s.steps - run.step));
  std::cout << con.clear_line() << line.str() << (con.in_place ? "" : "\n") << std::flush;
}

// Why a run stopped before its last step: a signal (Ctrl-C: SIGINT, or SIGTERM), or its data
// failing (a token file that shrank or changed under it), on this rank or another.
struct Halt {
  int signal = 0;            // SIGINT or SIGTERM, or 0
  bool data_failed = false;  // on some rank
  std::string data_error;    // this rank's message ("" when it was another rank's)
  bool agreed = true;        // every rank halts at this step (agree_on_halt)
  explicit operator bool() const { return signal != 0 || data_failed; }
};

// Whether to stop before the next step: under mpirun every rank must stop at the same step (the
// others would wait for it in the next collective), so the ranks agree once a step, all_reduce
// of the largest reason; rank 0 then saves for all of them.
Halt agree_on_halt(const std::string& data_error, const Console& con) {
  Halt h{examples::StopSignals::received(), !data_error.empty(), data_error, true};
#ifdef TAPEGRAD_GPT_MPI
  if (con.world > 1) {
    const double code = double(h.signal) + (h.data_failed ? 1000.0 : 0.0);
    const auto all = std::int64_t(distributed::all_reduce(code, distributed::ReduceOp::max));
    h.data_failed = all >= 1000;
    h.signal = h.signal != 0 ? h.signal : int(all % 1000);
  }
#else
  (void)con;
#endif
  return h;
}

// Trains until --steps (or --stop-after), or until a Halt: then the run is left as it was after
// its last whole step, for the caller to save.
Halt train(Trainer& t, RunRecord& run, const TextData& d, const Settings& s, const Console& con,
           const std::map<std::string, std::string>& notes, const gpt::RunFolder& folder) {
  const std::size_t T = std::size_t(s.block_size), B = std::size_t(s.batch_size);
  const std::int64_t stop = s.stop_after > 0 ? std::min(s.stop_after, s.steps) : s.steps;
  double shown_at = -1.0;
  // --profile N: steps [first, first + N) are profiled, after 10 warm-up steps where the run
  // has them; a validation cuts the window short (its time is nobody's training step).
  const std::int64_t profile_first =
      std::clamp<std::int64_t>(stop - s.profile, run.step, run.step + 10);
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
  std::string data_error;  // the data failed (here: reading a batch, or validating)
  t.model.train();
  while (run.step < stop) {
    // The data generator as the step finds it (a copy continues the same stream): a step that
    // does not happen leaves it so.
    const Generator data_gen_before = *t.data_gen;
    std::vector<data::Batch> batches;
    if (data_error.empty()) try {
        batches = read_batches(t, d, s, con);
      } catch (const DataError& e) {
        data_error = e.what();
      }
    if (const Halt halt = agree_on_halt(data_error, con)) {
      *t.data_gen = data_gen_before;
      return halt;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const double lr = t.sched.get_last_lr()[0];
    if (s.profile > 0 && run.step == profile_first) profiler.emplace();
    const double loss = train_step(t, batches, d, s, con);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run.train_seconds += dt;
    run.step_seconds.push_back(float(dt));
    run.train_losses.push_back(float(loss));
    const std::int64_t done = ++run.step;
    const bool evaluates =
        con.rank == 0 && (done % s.eval_every == 0 || done == s.steps || done == stop);
    if (profiler && (++profiled == s.profile || evaluates || done == stop)) print_profile();
    const bool show =
        done == stop || (con.in_place ? run.train_seconds - shown_at >= 0.1
                                      : done % std::max<std::int64_t>(1, s.steps / 10) == 0);
    if (!con.quiet && show) shown_at = run.train_seconds, show_progress(run, s, con, lr);
    if (!evaluates) continue;
    ValidationLoss v;
    try {
      v = validation_loss(t.model, d, B, T);
    } catch (const DataError& e) {  // the step is whole: it is saved, without its validation
      data_error = e.what();
      continue;
    }
    run.val_history.emplace_back(done, float(v.nats_per_token));
    run.val_bits_per_byte = v.bits_per_byte;
    const bool best = v.nats_per_token < run.best_val;
    if (best) run.best_val = v.nats_per_token;
    save(t, run, notes, folder, best);
    if (!con.quiet)
      std::cout << con.clear_line() << "step " << done << ": validation loss "
                << gpt::fixed(v.nats_per_token, 4) << " (" << gpt::fixed(v.bits_per_byte, 4)
                << " bits per byte)" << (best ? " (best so far, saved)" : "") << std::endl;
  }
  // The last step's validation failed: rank 0 stops alone (the other ranks have finished).
  if (!data_error.empty()) return Halt{0, true, data_error, false};
  return {};
}

// A run halted before its end: rank 0 saves the state after its last whole step (unless
// last.safetensors holds it already) and says how to go on; every rank waits for that save
// before it ends (mpirun ends the whole job as soon as one rank exits with an error). Returns the
// exit status: 128 + the signal's number, or 2 when the data failed.
int stop_run(Trainer& t, RunRecord& run, const Halt& halt,
             const std::map<std::string, std::string>& notes, const gpt::RunFolder& folder,
             const Console& con) {
  if (con.rank == 0) {
    if (con.in_place) std::cout << '\n';  // after the progress line
    if (run.step > run.saved_step && run.step > 0) save(t, run, notes, folder, false);
    const std::string why = halt.signal != 0
                                ? "stopped by " + examples::StopSignals::name(halt.signal)
                                : "stopped: the training data failed";
    if (run.saved_step >= 0)
      std::cout << why << " after step " << run.step << "; " << folder.last.string()
                << " holds it: continue with the same flags and --resume"
                << (halt.data_failed ? ", once the data is whole again" : "") << std::endl;
    else
      std::cout << why << " before the first step; nothing was saved" << std::endl;
  }
  if (!halt.data_error.empty())
    std::cerr << "gpt" << (con.world > 1 ? " rank " + std::to_string(con.rank) : std::string())
              << ": " << halt.data_error << std::endl;
#ifdef TAPEGRAD_GPT_MPI
  if (con.world > 1 && halt.agreed) distributed::barrier();
#endif
  return halt.data_failed ? 2 : examples::StopSignals::exit_status(halt.signal);
}

// ---- what the run shows ------------------------------------------------------------------------

// The first validation line of at least 24 characters, cut to the context (for the heatmaps).
// The validation text of --data-format text starts where the training text stops, most often
// within a line: a whole line is taken after it when there is one.
std::u32string attention_line(const TextData& d, std::size_t T) {
  const std::vector<std::u32string> text_form = {d.val_text};
  const std::vector<std::u32string>& entries = d.split.val.empty() ? text_form : d.split.val;
  std::u32string cut_line;  // the text form's first line, which the split may have cut
  for (const std::u32string& e : entries)
    for (std::size_t begin = 0; begin < e.size();) {
      std::size_t end = e.find(U'\n', begin);
      if (end == std::u32string::npos) end = e.size();
      const std::u32string line = e.substr(begin, std::min(end - begin, T));
      if (begin == 0 && d.split.val.empty()) {
        cut_line = line;
      } else if (end - begin >= 24) {
        return line;
      }
      begin = end + 1;
    }
  if (cut_line.size() >= 24) return cut_line;
  return entries.empty() ? U"" : entries.front().substr(0, std::min(entries.front().size(), T));
}

// loss.png and attention.png (through gnuplot, when installed), from data files in OUT; then the
// pictures that were drawn are listed (no attention.png without a validation line to show).
void draw_pictures(tt::GPT& model, const RunRecord& run, const TextData& d, const Settings& s,
                   const gpt::RunFolder& folder) {
  const std::u32string line = attention_line(d, std::size_t(s.block_size));
  std::vector<Array> weights;
  std::vector<std::string> labels;  // each token's text, for the heatmaps' axes
  std::vector<std::int64_t> enc =
      d.tokenizer.encode(data::encode_utf8(line), "the validation text");
  enc.resize(std::min(enc.size(), std::size_t(s.block_size)));
  if (!enc.empty()) {
    autograd::NoGradGuard no_grad;
    model.eval();
    IndexArray ids = IndexArray::from_shape({1, enc.size()});
    std::copy(enc.begin(), enc.end(), ids.begin());
    model.features(ids, &weights);
    for (const std::int64_t id : enc) labels.push_back(gpt::tic_label(d.tokenizer.decode(&id, 1)));
  }
  gpt::write_loss_data(folder.dir, run.train_losses, run.val_history);
  gpt::write_attention_data(folder.dir, weights);
  const std::vector<examples::Picture> pictures =
      gpt::pictures("GPT on " +
                        std::string(!s.tokens.empty() ? "your tokens"
                                    : s.data.empty()  ? "the fortunes"
                                                      : "your text") +
                        ": " + std::to_string(s.n_layer) + " layers, width " +
                        std::to_string(s.n_embd) + ", " + s.pos + " positions",
                    weights.size(), std::size_t(s.n_head), labels,
                    d.tokenizer.name() == "char" ? "character" : "token");
  examples::write_plot_script(
      folder.dir,
      "# Draws the pictures of examples/gpt from the data files in this folder: gnuplot plots.gp",
      pictures);
  const examples::Drawing drawn = examples::draw(folder.dir, pictures);
  if (!drawn.drawn.empty()) {
    std::cout << "pictures:";
    for (std::size_t i = 0; i < drawn.drawn.size(); ++i)
      std::cout << (i ? ", " : " ") << drawn.drawn[i];
    std::cout << "\n";
  }
  if (!drawn.problem.empty()) std::cout << drawn.problem << "\n";
  if (!line.empty()) std::cout << "attention line: \"" << data::encode_utf8(line) << "\"\n";
}

void print_sample(tt::GPT& model, const data::Tokenizer& tokenizer, const Settings& s) {
  if (s.sample_tokens == 0) return;
  Generator sample_gen(s.seed + 2);
  // The prompt is the end of an entry, "%\n", for fortunes: the model writes the start of a new
  // one. A text (or a token file) has no entries: a line end, and the model starts a line.
  const std::vector<std::int64_t> start =
      tokenizer.encode(s.data_format == "fortunes" ? "%\n" : "\n", "the prompt");
  IndexArray prompt = IndexArray::from_shape({1, start.size()});
  std::copy(start.begin(), start.end(), prompt.begin());
  const auto options = tt::GenerateOptions(s.sample_tokens).temperature(0.8).top_k(200);
  const auto t0 = std::chrono::steady_clock::now();
  const IndexArray out = model.generate(prompt, options, sample_gen);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string unit = tokenizer.name() == "char" ? "characters" : "tokens";
  std::cout << "sample (temperature 0.8, top-k 200, " << s.sample_tokens << " " << unit << ", "
            << gpt::fixed(double(s.sample_tokens) / seconds, 0) << " " << unit
            << "/s with the cache):\n"
            << tokenizer.decode(out.data() + start.size(), out.size() - start.size()) << "\n";
}

// --export-hf: the final model in Hugging Face's layout, with GPT-2's tokenizer when it was the
// one trained with, and --init-from's config.json fields (its dropouts) when there was one;
// written beside the folder, then renamed into place whole (open_export).
void export_hf(const tt::GPT& model, const RunRecord& run, const data::Tokenizer& tokenizer,
               const Settings& s, const std::optional<InitFrom>& init,
               examples::StagedFolder* target) {
  if (target == nullptr) return;
  const data::GPT2Tokenizer* gpt2 = tokenizer.gpt2();
  pretrained::save_gpt2(model, target->staging().string(), gpt2, init ? &init->config : nullptr);
  target->commit();
  std::cout << "exported the model after step " << run.step << " (validation loss "
            << gpt::fixed(run.val_history.back().second, 4) << ") to " << s.export_hf
            << " in Hugging Face's layout"
            << (gpt2 ? "" : " (no vocab.json and merges.txt: the tokenizer is not GPT-2's)")
            << "\n";
}

// The closing line for bench/gpt_compare; the exit status: did the validation loss fall?
int report_result(tt::GPT& model, const RunRecord& run, const Settings& s, const Console& con,
                  double exposed_ms) {
  // The median step time, the first 10 steps (warming the caches) left out when there are more.
  const std::size_t skipped = run.step_seconds.size() > 10 ? 10 : 0;
  std::vector<float> sorted(run.step_seconds.begin() + std::ptrdiff_t(skipped),
                            run.step_seconds.end());
  float median = 0.0f;
  if (!sorted.empty()) {
    std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(sorted.size() / 2),
                     sorted.end());
    median = sorted[sorted.size() / 2];
  }
  const double tokens = double(s.batch_size * s.grad_accum * con.world * s.block_size);
  const double final_val = run.val_history.back().second,
               first_val = run.val_history.front().second;
  std::cout << "gpt result: steps=" << s.steps << " val_loss=" << gpt::fixed(final_val, 4)
            << " val_bits_per_byte=" << gpt::fixed(run.val_bits_per_byte, 4)
            << " best_val_loss=" << gpt::fixed(run.best_val, 4)
            << " train_loss=" << gpt::fixed(run.train_losses.back(), 4)
            << " step_ms_median=" << gpt::fixed(median * 1e3, 3)
            << " tokens_per_s=" << gpt::fixed(median > 0 ? tokens / median : 0.0, 1)
            << " ranks=" << con.world << " comm_exposed_ms=" << gpt::fixed(exposed_ms, 3)
            << " flops_per_token=" << std::int64_t(model.flops_per_token())
            << " seconds=" << gpt::fixed(run.train_seconds, 1) << std::endl;
  if (!(final_val < first_val)) {
    std::cerr << "the validation loss did not fall: " << first_val << " -> " << final_val << '\n';
    return 1;
  }
  return 0;
}

void describe(const Trainer& t, const RunRecord& run, const TextData& d, const Settings& s,
              const Console& con) {
  if (d.train_ids.file)
    std::cout << "gpt: the token file " << s.tokens << " (" << d.train_ids.size()
              << " training and " << d.val_ids.size() << " validation tokens, read from the file";
  else
    std::cout << "gpt: " << d.files.size() << " file" << (d.files.size() == 1 ? "" : "s")
              << " as --data-format " << s.data_format << ", "
              << (s.data_format == "text"
                      ? "one stream split by characters at --val-fraction " +
                            flags::number_text(s.val_fraction)
                      : std::to_string(d.split.train.size()) + " training and " +
                            std::to_string(d.split.val.size()) + " validation entries")
              << " (" << d.train_ids.size() << " and " << d.val_ids.size() << " tokens, "
              << gpt::fixed(double(d.train_bytes) / double(d.train_ids.size()), 2)
              << " bytes per token";
  if (d.tokenizer.name() == "char")
    std::cout << "; "
              << std::count(d.val_ids.ids.begin(), d.val_ids.ids.end(), data::Vocabulary::kUnk)
              << " validation characters are <unk>";
  std::cout << "), tokenizer " << s.tokenizer << ", vocabulary " << d.tokenizer.vocab_size()
            << "\n     n_layer=" << s.n_layer << " n_head=" << s.n_head << " n_embd=" << s.n_embd
            << " block_size=" << s.block_size << " pos=" << s.pos << " norm=" << s.norm
            << " mlp=" << s.mlp << " gelu=" << s.gelu << " dropout=" << s.dropout << ", "
            << t.model.num_params() << " parameters ("
            << gpt::fixed(t.model.flops_per_token() / 1e6, 2) << " MFLOP per token); batch "
            << s.batch_size
            << (con.world > 1 ? " per rank x " + std::to_string(con.world) + " ranks" : "")
            << (s.grad_accum > 1 ? " x " + std::to_string(s.grad_accum) + " micro-batches" : "")
            << (s.init_from.empty() ? "" : ", from " + s.init_from)
            << (s.bf16 ? ", products in bf16 (validation in float32)" : "") << ", " << s.steps
            << " steps, eval every " << s.eval_every << ", threads=" << s.threads
            << (run.step > 0 ? ", resumed at step " + std::to_string(run.step) : std::string())
            << std::endl;
}

// ---- the program -------------------------------------------------------------------------------

#ifdef TAPEGRAD_GPT_MPI
// Every rank has read the checkpoint (or built the same model from the same seed); constructing
// DDP is a collective, so rank 0 cannot overwrite the file before the others have read it.
// Dropout: each rank its own masks (the same masks for different windows would be a weaker
// regulariser). A Dropout's masks are the stream {seed, call number} (nn/dropout.hpp), and its
// calls advance alike on every rank (one training forward a step). So every layer takes its seed
// now, from the generator all ranks hold alike, and rank r uses that seed mixed with r: rank r's
// streams are a function of rank 0's, which the checkpoint saves, and a run stopped and resumed
// on the same number of ranks continues every rank's masks where they were.
void start_data_parallel(std::optional<distributed::DistributedDataParallel>& ddp, Trainer& t,
                         const Settings& s, const Console& con) {
  if (!distributed::launched_by_mpirun()) return;
  ddp.emplace(t.model,
              distributed::DistributedDataParallelOptions().check_in_sync(s.check_in_sync));
  if (con.world > 1 && s.dropout > 0)  // (on one rank: as without MPI)
    for (const auto& [name, m] : t.model.named_modules())
      if (auto* d = dynamic_cast<nn::Dropout*>(m)) {
        if (d->reseed_pending()) d->set_stream_state(t.model_gen->next_u64(), 0);
        if (con.rank > 0)
          d->set_stream_state(d->seed() ^ (std::uint64_t(con.rank) * 0x9E3779B97F4A7C15ULL),
                              d->calls());
      }
}

// What backward waited for at its end, per step, in ms (printed), or 0 without DDP.
double report_communication(const std::optional<distributed::DistributedDataParallel>& ddp) {
  if (!ddp || ddp->total().steps == 0) return 0.0;
  const distributed::SyncStats& t = ddp->total();
  const double exposed_ms = 1e3 * t.exposed_seconds / double(t.steps);
  std::cout << "communication: " << t.buckets / t.steps << " buckets of gradients per step ("
            << gpt::fixed(double(t.bytes) / double(t.steps) / 1e6, 2) << " MB), "
            << gpt::fixed(exposed_ms, 3) << " ms per step exposed (waited for at the end of "
            << "backward), " << gpt::fixed(1e3 * t.communication_seconds / double(t.steps), 3)
            << " ms from the first bucket's start to the last one's end\n";
  return exposed_ms;
}
#endif

// Rank 0 speaks for the job: the other ranks' standard output, std::cout and printf alike, goes
// to /dev/null (their errors, on standard error, still show).
Console console(int rank, int world) {
  if (rank != 0) {
    std::cout.flush();
    std::cout.rdbuf(nullptr);
    if (!std::freopen("/dev/null", "w", stdout)) std::fclose(stdout);
  }
  return {rank, world, world == 1 && isatty(fileno(stdout)) != 0};
}

// Who writes the line a first Ctrl-C or SIGTERM prints ("gpt", or "gpt rank 1 of 2 (pid 4321)").
std::string signal_notice_name(const Console& con) {
  if (con.world == 1) return "gpt";
  return "gpt rank " + std::to_string(con.rank) + " of " + std::to_string(con.world) + " (pid " +
         std::to_string(::getpid()) + ")";
}

// A signal came once the training was done and saved: what is left (pictures, sample, export) is
// skipped; --resume does it (there is nothing left to train). Returns the exit status, or 0 when
// no signal came.
int stopped_after_training(const RunRecord& run, const gpt::RunFolder& folder) {
  const int sig = examples::StopSignals::received();
  if (sig == 0) return 0;
  std::cout << "stopped by " << examples::StopSignals::name(sig) << " after the last step ("
            << run.step << ", saved in " << folder.last.string()
            << "): the pictures, sample and export that were left are skipped; the same flags "
               "and --resume make them"
            << std::endl;
  return examples::StopSignals::exit_status(sig);
}

int run_gpt(int argc, char** argv, Console con) {
  Settings s = parse_settings(argc, argv);
  con.quiet = s.quiet;
  set_num_threads(static_cast<int>(s.threads));
  const std::optional<InitFrom> init = open_init_from(s);  // (--block-size's default too)
  check_export(s);
  // The run's folders are taken for the whole run before anything else is read: a second run
  // given either is refused now. Only rank 0 writes into them.
  const std::unique_ptr<examples::StagedFolder> export_to =
      con.rank == 0 ? open_export(s) : nullptr;
  check_no_output_replaces_an_input(s);
  const gpt::RunFolder folder = gpt::prepare_run_folder(s.out, s.resume, con.rank == 0);
  const TextData text = load_text(s);
  const tt::GPTConfig config = model_config(s, text.tokenizer, init);
  const std::unique_ptr<Trainer> trainer = build_trainer(s, config, init);
  auto notes = gpt::model_notes(config, text.tokenizer);
  notes["gpt.train_block_size"] =
      std::to_string(s.block_size);  // the windows (--init-from: not n_positions)
  if (s.tokens.empty()) notes["gpt.data_format"] = s.data_format;  // other text, other run

  RunRecord run;
  run.best_val = gpt::best_val_on_disk(folder.best);  // never replaced by a worse model
  if (s.resume && folder.has_last) resume(*trainer, run, notes, folder.last);
  if (s.resume && !folder.has_last)
    std::cout << "no " << folder.last.string() << " to resume from: starting from scratch"
              << (std::isfinite(run.best_val)
                      ? " (" + folder.best.string() + ", validation " +
                            gpt::fixed(run.best_val, 4) + ", is kept unless this run does better)"
                      : std::string())
              << "\n";
  gpt::check_step_fits(run.step, s.steps, folder.last);
#ifdef TAPEGRAD_GPT_MPI
  std::optional<distributed::DistributedDataParallel> ddp;  // (a collective: every rank builds it)
  start_data_parallel(ddp, *trainer, s, con);
  if (ddp) trainer->ddp = &*ddp;
#endif
  describe(*trainer, run, text, s, con);
  if (run.step == 0 && con.rank == 0) {
    const ValidationLoss v =
        validation_loss(trainer->model, text, std::size_t(s.batch_size), std::size_t(s.block_size));
    run.val_history.emplace_back(0, float(v.nats_per_token));
    const auto V = text.tokenizer.vocab_size();
    std::cout << "step 0: validation loss " << gpt::fixed(v.nats_per_token, 4) << " (ln " << V
              << " = " << gpt::fixed(std::log(double(V)), 4) << "), "
              << gpt::fixed(v.bits_per_byte, 4) << " bits per byte" << std::endl;
  }
  // From here on a first Ctrl-C (or SIGTERM) lets the current step finish and saves it; until
  // here there is nothing to save, and the signal ends the program at once.
  const examples::StopSignals signals(
      signal_notice_name(con),
      con.world > 1 ? "; mpirun sends SIGTERM on Ctrl-C, and when another rank has failed: its "
                      "own message then says which"
                    : "");
  if (const Halt halt = train(*trainer, run, text, s, con, notes, folder))
    return stop_run(*trainer, run, halt, notes, folder, con);
  if (con.in_place && !s.quiet) std::cout << '\n';
  if (s.stop_after > 0 && s.stop_after < s.steps) {
    std::cout << "stopped after step " << run.step << "; continue with --resume (checkpoint "
              << folder.last.string() << ")\n";
    return 0;
  }
  double exposed_ms = 0.0;
#ifdef TAPEGRAD_GPT_MPI
  exposed_ms = report_communication(ddp);
#endif
  if (con.rank != 0) return 0;  // rank 0 alone draws, samples and reports
  if (const int status = stopped_after_training(run, folder)) return status;
  draw_pictures(trainer->model, run, text, s, folder);
  if (const int status = stopped_after_training(run, folder)) return status;
  print_sample(trainer->model, text.tokenizer, s);
  if (const int status = stopped_after_training(run, folder)) return status;
  export_hf(trainer->model, run, text.tokenizer, s, init, export_to.get());
  return report_result(trainer->model, run, s, con, exposed_ms);
}

int train_gpt(int argc, char** argv) {
  tapegrad::keep_freed_memory(true);  // a training process reuses its freed buffers (memory.hpp)
#ifdef TAPEGRAD_GPT_MPI
  // MPI only when mpirun started us: alone, the program runs as it does without MPI.
  std::optional<distributed::Environment> mpi;
  if (distributed::launched_by_mpirun()) mpi.emplace(argc, argv);
  const Console con = console(mpi ? distributed::rank() : 0, mpi ? distributed::world_size() : 1);
  if (con.world == 1) return run_gpt(argc, argv, con);
  // On several ranks an error on one must end them all, and say why: distributed::abort prints
  // the message and ends the job (an exception leaving Environment's scope would end it too,
  // without the message).
  try {
    return run_gpt(argc, argv, con);
  } catch (const std::exception& e) {
    distributed::abort(std::string("gpt: ") + e.what(), 2);
  }
#else
  return run_gpt(argc, argv, console(0, 1));
#endif
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("gpt", [&] { return train_gpt(argc, argv); });
}
