// examples/gpt/gpt_sample.cpp: generate text with a GPT trained by examples/gpt, with GPT-2, or
// with a Llama.
//
//     gpt_sample                                          # from gpt_out/best.safetensors
//     gpt_sample --prompt "The meaning of life" --tokens 300 --temperature 0.8 --top-k 20 --seed 7
//     gpt_sample --model gpt2 --prompt "Hello, I'm a language model,"   # a Hugging Face folder
//     gpt_sample --model SmolLM2-135M --adapter my-lora --prompt "Once"  # a Llama, a PEFT adapter
//     gpt_sample --compare                                # cached and uncached: same text, and the speed of each
//
// --model is a checkpoint of examples/gpt, whose notes (sizes, positions, norm, MLP, vocabulary)
// rebuild the model, each checked against its range and against the tensors' shapes before
// anything is built (tapegrad/train/gpt_model.hpp); or a Hugging Face GPT-2 folder (config.json,
// model.safetensors, vocab.json, merges.txt; train::load_model), or a Llama folder (config.json,
// model.safetensors, tokenizer.json), with --adapter a LoRA adapter in PEFT's layout attached to
// the model. It samples with generate() (transformer/generate.hpp): a
// cache of keys and values, so each new token costs one position. Characters of the prompt that
// a character vocabulary lacks become <unk>. It reports the prompt's pass and the generation
// apart: the prompt is read in one pass (prompt tokens/s), then each new token costs one
// position (generated tokens/s), and a last line for benchmarks:
//     gpt_sample result: prompt_tokens=<n> new_tokens=<m> prompt_tokens_per_s=<p> tokens_per_s=<g>
// With --compare it also samples without the cache (the model
// re-run on the whole context for every character) from the same seed, checks that both give the
// same characters, and prints the speed of each, and the time of one pass over a full context
// (what nanoGPT pays per character).
//
// The memory of sampling is counted from the sizes before anything runs (inference_memory.hpp):
// the cache of keys and values (the whole context's, allocated at once), or without the cache the
// passes over up to the prompt and --tokens positions. Above what the machine gives the run, it is
// refused with the figure and the flag that lowers it; --compare's pass over a full context is
// then not timed, and says so.
//
// Exit status: 0, or 1 when --compare finds a difference, 2 for bad flags or a bad checkpoint,
// with one line saying which.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>
#include <tapegrad/train.hpp>

#include "../common/checked_main.hpp"
#include "../common/flag_checks.hpp"
#include "inference_memory.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

struct Settings {
  std::string model = "gpt_out/best.safetensors", adapter;
  std::optional<std::string> prompt;  // default: "%\n" (a new fortune), "\n" for GPT-2
  std::int64_t tokens = 500, top_k = 200, threads = 1;
  double temperature = 0.8;
  std::uint64_t seed = 0;
  bool no_cache = false, compare = false, bf16 = false;
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
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.add_option("--model,--checkpoint", s.model,
                 "a checkpoint written by gpt (best.safetensors or last.safetensors), or a "
                 "Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json, "
                 "merges.txt), or a Llama folder (config.json, model.safetensors, "
                 "tokenizer.json)");
  app.add_option("--adapter", s.adapter,
                 "a LoRA adapter folder in PEFT's layout (adapter_config.json, "
                 "adapter_model.safetensors) to run the model with");
  app.add_option("--prompt", s.prompt,
                 "the text to continue (default: an entry separator, so a new fortune starts; a "
                 "new line for GPT-2)");
  app.add_option("--tokens", s.tokens, "tokens (characters, for a character model) to generate")
      ->check(flags::integer_in(0, 100'000));
  app.add_option("--temperature", s.temperature,
                 "logits are divided by it; lower is more conservative")
      ->check(flags::number_in(0.01, 100));
  app.add_option("--top-k", s.top_k, "sample among the k most likely characters (0: all)")
      ->check(flags::integer_in(0, train::GPTLimits::kMaxVocab));
  app.add_option("--seed", s.seed, "seed of the sampling")->check(flags::unsigned_integer());
  app.add_option("--threads", s.threads, "threads of tapegrad's kernels")
      ->check(flags::integer_in(1, 256));
  app.add_flag("--no-cache", s.no_cache,
               "re-run the model on the whole context for every character");
  app.add_flag("--bf16", s.bf16,
               "the matrix products in bfloat16, summed in float32 (torch.autocast's bf16)");
  app.add_flag("--compare", s.compare,
               "sample with and without the cache, check they agree, print both speeds");
  examples::parse_flags(app, argc, argv);
  return s;
}

IndexArray prompt_ids(const Settings& s, const train::LoadedModel& m) {
  const std::string prompt = s.prompt ? *s.prompt : m.kind == "gpt checkpoint" ? "%\n" : "\n";
  if (prompt.empty()) throw examples::FlagError("--prompt: expected at least one character");
  const std::vector<std::int64_t> ids = m.tokenizer.encode(prompt, "--prompt");
  IndexArray idx = IndexArray::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), idx.begin());
  return idx;
}

IndexArray sample(tt::CausalLM& model, const IndexArray& idx, const Settings& s, bool cache,
                  double& seconds) {
  auto options = tt::GenerateOptions(s.tokens).temperature(s.temperature).use_cache(cache);
  if (s.top_k > 0) options.top_k(s.top_k);
  Generator gen(s.seed);
  const auto t0 = std::chrono::steady_clock::now();
  IndexArray out = tt::generate(model, idx, options, gen);
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
double full_context_pass(tt::CausalLM& model, const IndexArray& text) {
  const std::size_t T = std::size_t(model.block_size());
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

// The memory sampling holds, counted from the sizes before anything runs (inference_memory.hpp):
// a context of a million positions (a GPT-2 config.json may say so) makes the cache of keys and
// values, or the passes of sampling without it, larger than any machine. Refused above what the
// machine gives the run, naming the flag that lowers it.
void check_sampling_memory(const train::LoadedModel& m, const Settings& s, std::size_t prompt,
                           bool cache) {
  const train::ModelSizes& c = m.sizes;
  const double usable = gpt::usable_memory_bytes();
  // The longest context a pass reads: the prompt and the new tokens, at most the model's context.
  const std::int64_t block = c.context,
                     T = std::min<std::int64_t>(block, std::int64_t(prompt) + s.tokens);
  const auto refuse = [&](const std::string& what, double need, const std::string& hint) {
    std::ostringstream os;
    os << what << " needs about " << memory_text(need) << ", more than the "
       << memory_text(std::max(0.0, usable)) << " this machine leaves the run ("
       << gpt::usable_memory_text() << "); " << hint;
    throw examples::FlagError(os.str());
  };
  // Without the cache every token runs the whole context again; its logits, of the last position.
  const double uncached = gpt::forward_bytes(c, 1, double(T), 1);
  if (cache) {  // the prompt's pass, then one position at a time, beside the whole cache
    const double need = gpt::cache_bytes(c, 1, double(T)) + gpt::cached_pass_bytes(c, double(T));
    if (need > usable)
      refuse("--model: the cache of keys and values of this model's context, " +
                 std::to_string(block) + " positions (2 x " + std::to_string(c.layers) +
                 " layers x " + std::to_string(block) + " x " + std::to_string(c.cache_width) +
                 " floats" + (c.cache_whole_context ? ", allocated at once" : "") + "),",
             need,
             uncached <= usable && !s.compare
                 ? "sample with --no-cache, which needs about " + memory_text(uncached)
                 : std::string("this model's context does not fit in the memory left"));
  }
  if ((!cache || s.compare) && uncached > usable) {
    const std::int64_t longest = gpt::longest_window(c, 1, T, 1, usable);
    refuse("--tokens " + std::to_string(s.tokens) +
               ": sampling without the cache runs the model on up to " + std::to_string(T) +
               " positions for every new token, which",
           uncached,
           longest > std::int64_t(prompt)
               ? "give --tokens " + std::to_string(longest - std::int64_t(prompt)) + " or fewer"
               : std::string("give a shorter --prompt"));
  }
}

// --compare: the same seed without the cache must give the same characters.
// `memory_left`: what the run could still use before sampling (gpt::usable_memory_bytes).
int compare(tt::CausalLM& model, const train::ModelSizes& c, const IndexArray& idx,
            const IndexArray& out, const Settings& s, double cached_seconds,
            const std::string& unit, double memory_left) {
  double seconds = 0.0;
  const bool same = sample(model, idx, s, /*cache=*/false, seconds) == out;
  std::cout << s.tokens << " " << unit << " without the cache in " << speed(s.tokens, seconds, unit)
            << "; the cache is " << std::setprecision(1) << std::fixed
            << seconds / std::max(cached_seconds, 1e-9) << "x faster; "
            << (same ? "the same " : "DIFFERENT ") << unit << std::endl;
  // (A context of a million positions would make this one pass take terabytes: not timed then.)
  const double pass = gpt::forward_bytes(c, 1, double(c.context), double(c.context));
  if (pass > memory_left) {
    std::cout << "one pass over a full context of " << c.context << " " << unit
              << ": not timed, it would need about " << memory_text(pass) << ", more than the "
              << memory_text(std::max(0.0, memory_left)) << " this machine leaves the run"
              << std::endl;
    return same ? 0 : 1;
  }
  const double full = full_context_pass(model, out);
  std::cout << "one pass over a full context of " << c.context << " " << unit
            << " (median of 30): " << full * 1e6 << " us, "
            << full / (std::max(cached_seconds, 1e-9) / double(std::max<std::int64_t>(s.tokens, 1)))
            << "x the cached cost per " << unit.substr(0, unit.size() - 1) << std::endl;
  return same ? 0 : 1;
}

// The prompt's pass alone, as generate() makes it first with the cache, in seconds: the second of
// two passes (the first pays for the buffers' first allocation, as generate()'s own pass will not).
double prompt_pass(tt::CausalLM& model, const IndexArray& idx) {
  model.reset_cache();
  model.forward_cached(idx);
  model.reset_cache();
  const auto t0 = std::chrono::steady_clock::now();
  model.forward_cached(idx);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  model.reset_cache();
  return seconds;
}

int run(int argc, char** argv) {
  tapegrad::keep_freed_memory(true);  // each step reuses the buffers of the last (memory.hpp)
  const Settings s = parse_settings(argc, argv);
  set_num_threads(static_cast<int>(s.threads));
  train::LoadedModel m = train::load_model(s.model, s.adapter);
  const IndexArray idx = prompt_ids(s, m);
  std::optional<autocast::bf16> mixed;
  if (s.bf16) mixed.emplace();
  if (!m.model->supports_cache()) {  // an attention of its own without one (--pos alibi)
    if (s.compare)
      throw examples::FlagError(
          "--compare: this model's attention keeps no cache of keys and "
          "values, so there is nothing to compare: sample without --compare");
    if (!s.no_cache)
      std::cout << "note: this model's attention keeps no cache of keys and values: each token "
                   "runs the whole context again"
                << std::endl;
  }
  const bool cache = (!s.no_cache || s.compare) && m.model->supports_cache();
  check_sampling_memory(m, s, idx.size(), cache);
  const double memory_left = gpt::usable_memory_bytes();  // (the heap keeps what sampling frees)
  // (a prompt longer than the context is cut by generate(): no pass of its own to time)
  const bool timed = cache && std::int64_t(idx.size()) <= m.sizes.context;
  const double prompt_seconds = timed ? prompt_pass(*m.model, idx) : 0.0;
  double seconds = 0.0;
  const IndexArray out = sample(*m.model, idx, s, cache, seconds);
  std::cout << m.tokenizer.decode(out.data(), out.size()) << "\n\n"
            << s.tokens << " " << m.unit() << " in " << speed(s.tokens, seconds, m.unit()) << " ("
            << (cache ? "with" : "without") << " the cache)" << std::endl;
  std::cout << "gpt_sample: " << m.kind << " " << s.model << m.adapter << ", " << m.parameters
            << " " << m.parameters_text() << ", tokenizer " << m.tokenizer.name() << "; loaded in "
            << std::fixed << std::setprecision(2) << m.seconds << " s" << std::defaultfloat
            << std::endl;
  if (timed) {  // the generation apart from the prompt's pass, which generate() made first
    const double generating = std::max(seconds - prompt_seconds, 1e-9);
    std::cout << "gpt_sample result: prompt_tokens=" << idx.size() << " new_tokens=" << s.tokens
              << std::fixed << std::setprecision(1)
              << " prompt_tokens_per_s=" << double(idx.size()) / std::max(prompt_seconds, 1e-9)
              << " tokens_per_s=" << double(s.tokens) / generating << std::defaultfloat
              << std::endl;
  }
  const int status =
      s.compare ? compare(*m.model, m.sizes, idx, out, s, seconds, m.unit(), memory_left) : 0;
  std::cout.flush();  // text that could not be written (a full disk) is not a success
  if (!std::cout) throw DataError("cannot write to standard output: the text is lost");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("gpt_sample", [&] { return run(argc, argv); });
}
