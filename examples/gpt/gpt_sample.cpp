// examples/gpt/gpt_sample.cpp: generate text with a GPT trained by examples/gpt.
//
//     gpt_sample                                          # from gpt_out/best.safetensors
//     gpt_sample --prompt "The meaning of life" --tokens 300 --temperature 0.8 --top-k 20 --seed 7
//     gpt_sample --compare                                # cached and uncached: same text, and the speed of each
//
// It rebuilds the model from the checkpoint's notes (sizes, positions, norm, MLP, vocabulary),
// each checked against its range and against the tensors' shapes before anything is built
// (model_notes.hpp), loads the weights (strict), and samples with GPT::generate: a cache of keys
// and values, so each new character costs one position. Characters of the prompt that the
// vocabulary lacks become <unk>. With --compare it also samples without the cache (the model
// re-run on the whole context for every character) from the same seed, checks that both give the
// same characters, and prints the speed of each, and the time of one pass over a full context
// (what nanoGPT pays per character).
//
// Exit status: 0, or 1 when --compare finds a difference, 2 for bad flags or a bad checkpoint,
// with one line saying which.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "../common/checked_main.hpp"
#include "../common/flag_checks.hpp"
#include "model_notes.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

struct Settings {
  std::string checkpoint = "gpt_out/best.safetensors", prompt = "%\n";
  std::int64_t tokens = 500, top_k = 200, threads = 1;
  double temperature = 0.8;
  std::uint64_t seed = 0;
  bool no_cache = false, compare = false;
};

// --temperature's range: below 0.01 the likeliest character wins anyway (a logit gap of 0.2
// becomes odds of e^20, beyond float's precision), and far smaller values overflow the logits
// divided by it to inf, whose softmax is NaN; above 100 every character is about equally likely.
// --tokens: at most 100,000 characters, under 20 s for the baby GPT with the cache (5,650 a second
// on an idle machine, examples/gpt/README.md).
Settings parse_settings(int argc, char** argv) {
  Settings s;
  CLI::App app("Generate text with a GPT trained by examples/gpt");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last wins
  app.add_option("--checkpoint", s.checkpoint,
                 "a checkpoint written by gpt (best.safetensors or last.safetensors)");
  app.add_option("--prompt", s.prompt,
                 "the text to continue (default: an entry separator, so a new fortune starts)");
  app.add_option("--tokens", s.tokens, "characters to generate")
      ->check(flags::integer_in(0, 100'000));
  app.add_option("--temperature", s.temperature,
                 "logits are divided by it; lower is more conservative")
      ->check(flags::number_in(0.01, 100));
  app.add_option("--top-k", s.top_k, "sample among the k most likely characters (0: all)")
      ->check(flags::integer_in(0, gpt::Limits::kMaxVocab));
  app.add_option("--seed", s.seed, "seed of the sampling")->check(flags::unsigned_integer());
  app.add_option("--threads", s.threads, "threads of tapegrad's kernels")
      ->check(flags::integer_in(1, 256));
  app.add_flag("--no-cache", s.no_cache,
               "re-run the model on the whole context for every character");
  app.add_flag("--compare", s.compare,
               "sample with and without the cache, check they agree, print both speeds");
  examples::parse_flags(app, argc, argv);
  return s;
}

struct Loaded {
  std::unique_ptr<tt::GPT> model;
  data::Tokenizer tokenizer;
  std::string unit() const { return tokenizer.name() == "char" ? "characters" : "tokens"; }
};

// A trained model's weights are finite. io::load takes any float (a safetensors file may hold
// Inf on purpose), so a diverged run's checkpoint, or an edited one whose checksums were written
// again, would load and sample NaN logits: refuse it, naming the tensor.
void check_finite(const nn::Module& model, const std::string& checkpoint) {
  for (const auto& [name, p] : model.named_parameters()) {
    const Array& w = p.data();
    const auto bad = std::find_if(w.begin(), w.end(), [](float v) { return !std::isfinite(v); });
    if (bad != w.end())
      throw DataError(checkpoint + ": the parameter '" + name + "' holds " + std::to_string(*bad) +
                      " at flat position " + std::to_string(bad - w.begin()) +
                      ": the run that saved it diverged, or the file was edited");
  }
}

// The model the checkpoint's notes describe, with the checkpoint's weights, in eval mode.
Loaded load_model(const std::string& checkpoint) {
  const io::SafetensorsFile f = io::load_safetensors(checkpoint);
  auto [config, tokenizer] = gpt::read_model_notes(f, checkpoint);
  Loaded m{std::make_unique<tt::GPT>(config, std::make_shared<Generator>(0)), std::move(tokenizer)};
  io::load(*m.model, checkpoint);  // the "model." part of the training checkpoint, strict
  check_finite(*m.model, checkpoint);
  m.model->eval();
  return m;
}

IndexArray prompt_ids(const Settings& s, const data::Tokenizer& tokenizer) {
  if (s.prompt.empty()) throw examples::FlagError("--prompt: expected at least one character");
  const std::vector<std::int64_t> ids = tokenizer.encode(s.prompt, "--prompt");
  IndexArray idx = IndexArray::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), idx.begin());
  return idx;
}

IndexArray sample(tt::GPT& model, const IndexArray& idx, const Settings& s, bool cache,
                  double& seconds) {
  auto options = tt::GenerateOptions(s.tokens).temperature(s.temperature).use_cache(cache);
  if (s.top_k > 0) options.top_k(s.top_k);
  Generator gen(s.seed);
  const auto t0 = std::chrono::steady_clock::now();
  IndexArray out = model.generate(idx, options, gen);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// `unit`: "characters" or "tokens".
std::string speed(std::int64_t tokens, double seconds, const std::string& unit) {
  const std::string one = unit.substr(0, unit.size() - 1);
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << seconds << " s: " << std::setprecision(0)
     << double(tokens) / std::max(seconds, 1e-9) << " " << unit << "/s, " << std::setprecision(1)
     << seconds / double(std::max<std::int64_t>(tokens, 1)) * 1e6 << " us per " << one;
  return os.str();
}

// nanoGPT re-runs a full context of block_size characters for every character once the text is
// longer than the context (its window slides instead of restarting): the cost of one such pass,
// the median of 30.
double full_context_pass(tt::GPT& model, const IndexArray& text) {
  const std::size_t T = std::size_t(model.config().block_size());
  IndexArray context = IndexArray::from_shape({1, T});
  for (std::size_t t = 0; t < T; ++t) context(0, t) = text.data()[t % text.size()];
  std::vector<double> passes;
  autograd::NoGradGuard no_grad;
  for (int rep = 0; rep < 30; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor logits = model.forward(context);
    passes.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(passes.begin(), passes.end());
  return passes[passes.size() / 2];
}

// --compare: the same seed without the cache must give the same characters.
int compare(tt::GPT& model, const IndexArray& idx, const IndexArray& out, const Settings& s,
            double cached_seconds, const std::string& unit) {
  double seconds = 0.0;
  const bool same = sample(model, idx, s, /*cache=*/false, seconds) == out;
  std::cout << s.tokens << " " << unit << " without the cache in " << speed(s.tokens, seconds, unit)
            << "; the cache is " << std::setprecision(1) << std::fixed
            << seconds / std::max(cached_seconds, 1e-9) << "x faster; "
            << (same ? "the same " : "DIFFERENT ") << unit << std::endl;
  const double full = full_context_pass(model, out);
  std::cout << "one pass over a full context of " << model.config().block_size() << " " << unit
            << " (median of 30): " << full * 1e6 << " us, "
            << full / (std::max(cached_seconds, 1e-9) / double(std::max<std::int64_t>(s.tokens, 1)))
            << "x the cached cost per " << unit.substr(0, unit.size() - 1) << std::endl;
  return same ? 0 : 1;
}

int run(int argc, char** argv) {
  const Settings s = parse_settings(argc, argv);
  set_num_threads(static_cast<int>(s.threads));
  Loaded m = load_model(s.checkpoint);
  const IndexArray idx = prompt_ids(s, m.tokenizer);
  const bool cache = !s.no_cache || s.compare;
  double seconds = 0.0;
  const IndexArray out = sample(*m.model, idx, s, cache, seconds);
  std::cout << m.tokenizer.decode(out.data(), out.size()) << "\n\n"
            << s.tokens << " " << m.unit() << " in " << speed(s.tokens, seconds, m.unit()) << " ("
            << (cache ? "with" : "without") << " the cache)" << std::endl;
  return s.compare ? compare(*m.model, idx, out, s, seconds, m.unit()) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("gpt_sample", [&] { return run(argc, argv); });
}
