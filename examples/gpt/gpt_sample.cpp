// examples/gpt/gpt_sample.cpp: generate text with a GPT trained by examples/gpt.
//
//     gpt_sample                                          # from gpt_out/best.safetensors
//     gpt_sample --prompt "The meaning of life" --tokens 300 --temperature 0.8 --top-k 20 --seed 7
//     gpt_sample --compare                                # cached and uncached: same text, and the speed of each
//
// It rebuilds the model from the checkpoint's notes (sizes, positions, vocabulary), loads the
// weights (strict), and samples with GPT::generate: a cache of keys and values, so each new
// character costs one position. Characters of the prompt that the vocabulary lacks become <unk>.
// With --compare it also samples without the cache (the model re-run on the whole context for
// every character) from the same seed, checks that both give the same characters, and prints
// the speed of each, and the time of one pass over a full context (what nanoGPT pays per character). Exit status: 0, or 1 when --compare finds a difference, 2 for bad input.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include <tapegrad/tapegrad.hpp>

#include "run_files.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

int main(int argc, char** argv) {
  std::cerr << tapegrad::environment_line() << '\n';
  std::string checkpoint = "gpt_out/best.safetensors", prompt = "%\n";
  std::int64_t tokens = 500, top_k = 200, threads = 1;
  double temperature = 0.8;
  std::uint64_t seed = 0;
  bool no_cache = false, compare = false;
  CLI::App app("Generate text with a GPT trained by examples/gpt");
  app.add_option("--checkpoint", checkpoint,
                 "a checkpoint written by gpt (best.safetensors or last.safetensors)");
  app.add_option("--prompt", prompt,
                 "the text to continue (default: an entry separator, so a new fortune starts)");
  app.add_option("--tokens", tokens, "characters to generate")->check(CLI::NonNegativeNumber);
  app.add_option("--temperature", temperature,
                 "logits are divided by it; lower is more conservative")
      ->check(CLI::PositiveNumber);
  app.add_option("--top-k", top_k, "sample among the k most likely characters (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "seed of the sampling");
  app.add_option("--threads", threads, "threads of tapegrad's kernels")->check(CLI::PositiveNumber);
  app.add_flag("--no-cache", no_cache, "re-run the model on the whole context for every character");
  app.add_flag("--compare", compare,
               "sample with and without the cache, check they agree, print both speeds");
  CLI11_PARSE(app, argc, argv);
  set_num_threads(static_cast<int>(threads));

  std::unique_ptr<tt::GPT> model;
  data::Vocabulary vocab;
  std::u32string text;
  try {
    const io::SafetensorsFile f = io::load_safetensors(checkpoint);
    auto [config, v] = gpt::read_model_notes(f, checkpoint);
    vocab = std::move(v);
    model = std::make_unique<tt::GPT>(config, std::make_shared<Generator>(0));
    io::load(*model, checkpoint);  // the "model." part of the training checkpoint, strict
    text = data::decode_utf8(prompt, "--prompt");
  } catch (const std::exception& e) {
    std::cerr << "gpt_sample: " << e.what() << '\n';
    return 2;
  }
  if (text.empty()) {
    std::cerr << "gpt_sample: --prompt: expected at least one character\n";
    return 2;
  }
  model->eval();
  const std::vector<std::int64_t> ids = vocab.encode(text);
  IndexArray idx = IndexArray::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), idx.begin());
  auto options = tt::GenerateOptions(tokens).temperature(temperature);
  if (top_k > 0) options.top_k(top_k);

  using clock = std::chrono::steady_clock;
  auto run = [&](bool cache, double& seconds) {
    Generator gen(seed);
    const auto t0 = clock::now();
    IndexArray out = model->generate(idx, tt::GenerateOptions(options).use_cache(cache), gen);
    seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return out;
  };
  double seconds = 0.0;
  const IndexArray out = run(!no_cache || compare, seconds);
  std::cout << vocab.decode(out.data(), out.size()) << "\n\n"
            << tokens << " characters in " << std::fixed << std::setprecision(3) << seconds
            << " s: " << std::setprecision(0) << double(tokens) / seconds << " characters/s ("
            << ((!no_cache || compare) ? "with" : "without") << " the cache), "
            << std::setprecision(1) << seconds / double(std::max<std::int64_t>(tokens, 1)) * 1e6
            << " us per character" << std::endl;
  if (compare) {
    double uncached_seconds = 0.0;
    const IndexArray again = run(false, uncached_seconds);
    const bool same = again == out;
    std::cout << tokens << " characters without the cache in " << std::setprecision(3)
              << uncached_seconds << " s: " << std::setprecision(0)
              << double(tokens) / uncached_seconds << " characters/s, " << std::setprecision(1)
              << uncached_seconds / double(std::max<std::int64_t>(tokens, 1)) * 1e6
              << " us per character; the cache is " << uncached_seconds / seconds << "x faster; "
              << (same ? "the same characters" : "DIFFERENT characters") << std::endl;
    // nanoGPT re-runs a full context of block_size characters for every character once the text is
    // longer than the context (its window slides instead of restarting): the cost of one such pass.
    const std::size_t T = std::size_t(model->config().block_size());
    IndexArray context = IndexArray::from_shape({1, T});
    for (std::size_t t = 0; t < T; ++t) context(0, t) = out.data()[t % out.size()];
    std::vector<double> passes;
    {
      autograd::NoGradGuard no_grad;
      for (int rep = 0; rep < 30; ++rep) {
        const auto t0 = clock::now();
        const Tensor logits = model->forward(context);
        passes.push_back(std::chrono::duration<double>(clock::now() - t0).count());
      }
    }
    std::sort(passes.begin(), passes.end());
    const double full = passes[passes.size() / 2];
    std::cout << "one pass over a full context of " << T
              << " characters (median of 30): " << std::setprecision(1) << full * 1e6 << " us, "
              << full / (seconds / double(std::max<std::int64_t>(tokens, 1)))
              << "x the cached cost per character" << std::endl;
    if (!same) return 1;
  }
  return 0;
}
