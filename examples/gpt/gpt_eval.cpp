// examples/gpt/gpt_eval.cpp: score a text with a GPT or a Llama: the mean loss per token, bits per
// byte and perplexity.
//
//     gpt_eval --model gpt2 --text shakespeare.txt                 # a Hugging Face GPT-2 folder
//     gpt_eval --model SmolLM2-135M --text notes.txt               # a Llama folder (tokenizer.json)
//     gpt_eval --model SmolLM2-135M --adapter my-lora --text notes.txt   # with a PEFT LoRA adapter
//     gpt_eval --model gpt_out/best.safetensors --text notes.txt   # a checkpoint of examples/gpt
//     gpt_eval --model gpt2 --text big.txt --max-windows 8         # the first 8 windows only
//
// The text is tokenized with the model's own tokenizer (a special token's text, "<|endoftext|>",
// is read as ordinary text), then cut into windows of --window tokens (default: the model's
// context, n_positions or max_position_embeddings, or the whole text when it is shorter): window k reads tokens
// [kW, kW + W) and predicts each next one, so every token but the text's first is predicted once,
// from the 1 to W tokens of its window before it (no window overlaps another; the last one may be
// shorter). Hugging Face's perplexity guide, with a stride equal to the window, scores a window's
// first target too late by one: its figures differ slightly. The model runs in eval mode, without
// recording, and its logits are computed a few rows at a time.
//
// The memory of a pass is counted from the sizes before the first one (inference_memory.hpp): its
// attention weights grow with the square of the window, so a model whose context is a million
// positions would take terabytes for a long text. Above what the machine gives the run, it is
// refused with the figure and the --window that fits.
//
// It prints what it loaded, the text's size in bytes and tokens, a line per window, and last:
//     gpt_eval result: loss=<mean nats per predicted token> tokens=<predicted tokens>
//                      bits_per_byte=<b> perplexity=<exp(loss)> tokens_per_s=<t> seconds=<s>
// bits per byte = the loss summed over the predicted tokens, in bits, over the bytes those
// tokens stand for: it compares models whose tokens differ. tokens_per_s counts the forward
// passes only (not the load, not the tokenizing).
//
// Exit status 0; 2 for bad flags, a bad model or text, with one line saying which.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/train.hpp>

#include "../common/checked_main.hpp"
#include "../common/flag_checks.hpp"
#include "inference_memory.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

/// Text beyond this is not read: it would take minutes to score on a CPU, and its ids would need
/// eight bytes per token. Score a part of it instead.
constexpr std::uintmax_t kMaxTextBytes = std::uintmax_t(256) << 20;

struct Settings {
  std::string model, text, adapter;
  std::int64_t window = 0;  // 0: the model's context
  std::int64_t max_windows = 0, batch_size = 1, threads = 1;
  bool quiet = false, bf16 = false;
};

Settings parse_settings(int argc, char** argv) {
  Settings s;
  CLI::App app("Score a text with a GPT or a Llama: loss per token, bits per byte, perplexity");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.add_option("--model", s.model,
                 "a Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json, "
                 "merges.txt), a Llama folder (config.json, model.safetensors, tokenizer.json) or "
                 "a checkpoint written by gpt")
      ->required();
  app.add_option("--adapter", s.adapter,
                 "a LoRA adapter folder in PEFT's layout (adapter_config.json, "
                 "adapter_model.safetensors) to run the model with");
  app.add_option("--text", s.text, "the UTF-8 text to score")->required();
  app.add_option("--window", s.window, "tokens per window (default: the model's context)")
      ->check(flags::integer_in(2, train::GPTLimits::kMaxBlockSize));
  app.add_option("--max-windows", s.max_windows, "score the first N windows only (0: all)")
      ->check(flags::integer_in(0, 1'000'000'000));
  app.add_option("--batch-size", s.batch_size, "windows per forward pass")
      ->check(flags::integer_in(1, 1024));
  app.add_option("--threads", s.threads, "threads of tapegrad's kernels")
      ->check(flags::integer_in(1, 256));
  app.add_flag("--quiet", s.quiet, "no line per window");
  app.add_flag("--bf16", s.bf16,
               "the matrix products in bfloat16, summed in float32 (torch.autocast's bf16)");
  examples::parse_flags(app, argc, argv);
  return s;
}

/// What tokenizing a text holds per byte of it, at most: the text, its ids (8 bytes each, up to
/// one a byte) and BytePairEncoding::encode's lists of a piece (up to 28 bytes a byte when the
/// text is one piece: a BPE without pretokenizer, or GPT-2's on "!!!!..."). Measured with
/// GPT-2's tokenizer on 32 MiB: 31 bytes a byte for "!!!!...", 8 for the fortunes.
constexpr double kTokenizingBytesPerByte = 32;

// The text of --text, checked before it is read: a regular file (a FIFO would block the read), at
// most kMaxTextBytes, and small enough for its tokenizing to fit in memory (counted at its
// worst, from its size).
std::string read_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    const auto size = std::uintmax_t(st.st_size);
    if (size > kMaxTextBytes)
      throw DataError("--text: '" + path + "' holds " + std::to_string(size >> 20) +
                      " MiB, more than the " + std::to_string(kMaxTextBytes >> 20) +
                      " MiB gpt_eval scores (at thousands of tokens a second, that is hours): "
                      "score a part of it");
    const double need = kTokenizingBytesPerByte * double(size), usable = gpt::usable_memory_bytes();
    if (need > usable)
      throw DataError("--text: tokenizing the " + std::to_string(size >> 20) + " MiB of '" + path +
                      "' may need up to " + memory_text(need) + " (" +
                      std::to_string(int(kTokenizingBytesPerByte)) +
                      " bytes per byte of text), more than the " +
                      memory_text(std::max(0.0, usable)) + " this machine leaves the run (" +
                      gpt::usable_memory_text() + "): score a part of it, at most " +
                      std::to_string(std::uintmax_t(usable / kTokenizingBytesPerByte) >> 20) +
                      " MiB");
  }
  return io::read_file(path, "--text", kMaxTextBytes);  // (and what stat could not tell)
}

struct Score {
  double nats = 0.0;       // the loss summed over the predicted tokens
  std::size_t tokens = 0;  // predicted tokens (targets not ignored)
  std::size_t bytes = 0;   // the bytes those tokens stand for
  double seconds = 0.0;    // in the forward passes
};

// Windows [first, first + count) of length W (the last may be shorter), as one batch when they
// are all full, scored into `score` (train::summed_loss: the logits a few rows at a time, as the
// training's validation scores).
void score_windows(tt::CausalLM& model, const data::Tokenizer& tokenizer,
                   const std::vector<std::int64_t>& ids, std::size_t W,
                   const std::vector<std::size_t>& starts, Score& score) {
  const std::size_t T = std::min(W, ids.size() - 1 - starts.front());  // (equal for full windows)
  IndexArray x = IndexArray::from_shape({starts.size(), T}), y = x;
  for (std::size_t b = 0; b < starts.size(); ++b)
    for (std::size_t t = 0; t < T; ++t) {
      x(b, t) = ids[starts[b] + t];
      y(b, t) = ids[starts[b] + t + 1];
    }
  const std::int64_t ignore = tokenizer.ignore_index();
  const auto t0 = std::chrono::steady_clock::now();
  score.nats += train::summed_loss(model, x, y, ignore);
  score.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const std::int64_t id : y)
    if (id != ignore) ++score.tokens, score.bytes += tokenizer.bytes_of(id);
}

// The memory of the forward passes, counted from the sizes before the first one
// (inference_memory.hpp): the attention's weights grow with the square of the window, so a model
// whose context is a million positions (config.json accepts 2^20) would score a text of 40,000
// tokens in one window of 13 GB. Refused above what the machine gives the run, naming the
// window that fits.
void check_scoring_memory(const train::ModelSizes& c, const Settings& s, std::size_t W,
                          std::size_t batch) {
  const std::int64_t rows = train::logit_rows(c.vocab);
  const double usable = gpt::usable_memory_bytes();
  const double need = gpt::forward_bytes(c, double(batch), double(W), double(rows));
  if (need <= usable) return;
  const std::int64_t fits =
      gpt::longest_window(c, std::int64_t(batch), std::int64_t(W), rows, usable);
  std::ostringstream os;
  os << "--window " << W;
  if (s.window == 0)
    os << " (the default: the model's context, " << c.context
       << " positions, or the text's tokens when fewer)";
  os << ": scoring " << batch << " window" << (batch > 1 ? "s" : "") << " of " << W
     << " tokens at once needs about " << memory_text(need) << " (the attention's weights, "
     << batch << " x " << c.heads << " heads x " << W << " x " << W
     << " floats, the activations and the logits), more than the "
     << memory_text(std::max(0.0, usable)) << " this machine leaves the run ("
     << gpt::usable_memory_text() << "); ";
  if (fits >= 2)
    os << "give --window " << fits << " or less"
       << (batch > 1 ? " (or a smaller --batch-size)" : "");
  else
    os << "no window fits in the memory left";
  throw examples::FlagError(os.str());
}

int run(int argc, char** argv) {
  tapegrad::keep_freed_memory(true);  // each window reuses the last one's buffers (memory.hpp)
  const Settings s = parse_settings(argc, argv);
  set_num_threads(static_cast<int>(s.threads));
  const std::string text = read_text(s.text);
  train::LoadedModel m = train::load_model(s.model, s.adapter);
  tt::CausalLM& model = *m.model;
  const std::int64_t context = m.sizes.context;
  if (s.window > context)
    throw examples::FlagError("--window " + std::to_string(s.window) +
                              ": expected at most the "
                              "model's context, " +
                              std::to_string(context) + " tokens");
  std::cout << "gpt_eval: " << m.kind << " " << s.model << m.adapter << ": " << m.parameters << " "
            << m.parameters_text() << ", vocabulary " << m.sizes.vocab << ", context " << context
            << ", tokenizer " << m.tokenizer.name() << "; loaded in " << std::fixed
            << std::setprecision(2) << m.seconds << " s" << std::endl;

  const std::vector<std::int64_t> ids = m.tokenizer.encode(text, "--text '" + s.text + "'");
  if (ids.size() < 2)
    throw DataError("--text: '" + s.text + "' holds " + std::to_string(ids.size()) +
                    " token(s); scoring needs at least 2 (one to read, one to predict)");
  // The windows: --window tokens, or the model's context; a text shorter than that is one window
  // of its own length, which scores the same and allocates nothing longer than the text.
  const std::size_t W =
      s.window > 0 ? std::size_t(s.window) : std::min(std::size_t(context), ids.size() - 1);
  std::vector<std::size_t> starts;  // the windows' first tokens
  for (std::size_t at = 0; at + 1 < ids.size(); at += W) starts.push_back(at);
  if (s.max_windows > 0 && starts.size() > std::size_t(s.max_windows))
    starts.resize(std::size_t(s.max_windows));
  check_scoring_memory(m.sizes, s, std::min(W, ids.size() - 1),
                       std::min(starts.size(), std::size_t(s.batch_size)));
  std::cout << "gpt_eval: " << s.text << ": " << text.size() << " bytes, " << ids.size()
            << " tokens (" << std::setprecision(2) << double(text.size()) / double(ids.size())
            << " bytes per token); " << starts.size() << " window" << (starts.size() > 1 ? "s" : "")
            << " of up to " << W << " tokens, batch " << s.batch_size << std::endl;

  autograd::NoGradGuard no_grad;
  std::optional<autocast::bf16> mixed;
  if (s.bf16) mixed.emplace();
  Score score;
  const auto full = [&](std::size_t at) { return at + W + 1 <= ids.size(); };
  for (std::size_t i = 0; i < starts.size();) {
    std::vector<std::size_t> batch{starts[i]};
    while (full(batch.front()) && batch.size() < std::size_t(s.batch_size) &&
           i + batch.size() < starts.size() && full(starts[i + batch.size()]))
      batch.push_back(starts[i + batch.size()]);
    const Score before = score;
    score_windows(model, m.tokenizer, ids, W, batch, score);
    i += batch.size();
    if (!s.quiet)
      std::cout << "windows " << i - batch.size() + 1 << "-" << i << "/" << starts.size()
                << ": loss " << std::setprecision(4)
                << (score.nats - before.nats) /
                       double(std::max<std::size_t>(1, score.tokens - before.tokens))
                << std::endl;
  }
  if (score.tokens == 0)
    throw DataError("--text: every target of '" + s.text + "' is <unk>, which is not scored");
  const double loss = score.nats / double(score.tokens);
  std::cout << "gpt_eval result: loss=" << std::setprecision(4) << loss
            << " tokens=" << score.tokens
            << " bits_per_byte=" << score.nats / std::log(2.0) / double(score.bytes)
            << " perplexity=" << std::setprecision(3) << std::exp(loss)
            << " tokens_per_s=" << std::setprecision(1) << double(score.tokens) / score.seconds
            << " seconds=" << std::setprecision(3) << score.seconds << std::endl;
  std::cout.flush();  // a result that could not be written (a full disk) is not a success
  if (!std::cout) throw DataError("cannot write to standard output: the result is lost");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("gpt_eval", [&] { return run(argc, argv); });
}
