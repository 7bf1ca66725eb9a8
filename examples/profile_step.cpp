// examples/profile_step.cpp: where the time of a GPT training step goes, op by op.
//
// Builds the GPT of examples/gpt (by default its default size: 4 layers, 4 heads, width 128, a
// context of 64 characters, batches of 12 windows) over a 96-character vocabulary, feeds it
// random tokens, takes --warmup steps, then profiles --steps steps: forward, backward, gradient
// clipping and AdamW, as examples/gpt trains. It prints autograd::Profiler's table: per op and
// pass, calls, time, share of the profiled steps, and GFLOP/s or GB/s against this machine's peak,
// measured once (docs/engine.md#the-profiler says what each column counts).
//
//     build/examples/profile_step
//     build/examples/profile_step --n-embd 256 --block-size 128 --bf16 --steps 5
//
// To profile a real run on real text instead, `gpt --profile N` prints the same table for N
// steps of the run it is doing.
#include <cstdint>
#include <iostream>
#include <optional>
#include <random>

#include <CLI/CLI.hpp>
#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"
#include "common/flag_checks.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {
struct Settings {
  std::int64_t n_layer = 4, n_head = 4, n_embd = 128, block_size = 64, batch_size = 12,
               vocab = 96, steps = 3, warmup = 2, threads = 1;
  bool bf16 = false;
};

Settings parse(int argc, char** argv) {
  Settings s;
  CLI::App app("profile_step: the profiler's table of a few training steps of the GPT of "
               "examples/gpt, on random tokens",
               "profile_step");
  using flags::integer_in;
  app.add_option("--n-layer", s.n_layer, "Transformer blocks")->check(integer_in(1, 64));
  app.add_option("--n-head", s.n_head, "attention heads (must divide --n-embd)")
      ->check(integer_in(1, 256));
  app.add_option("--n-embd", s.n_embd, "model width")->check(integer_in(1, 8192));
  app.add_option("--block-size", s.block_size, "context length in tokens")
      ->check(integer_in(1, 8192));
  app.add_option("--batch-size", s.batch_size, "windows per step")->check(integer_in(1, 4096));
  app.add_option("--vocab", s.vocab, "vocabulary size")->check(integer_in(1, 1'000'000));
  app.add_option("--steps", s.steps, "steps profiled")->check(integer_in(1, 1000));
  app.add_option("--warmup", s.warmup, "steps before the profiled ones (buffers, caches)")
      ->check(integer_in(0, 1000));
  app.add_option("--threads", s.threads, "threads of tapegrad's kernels")
      ->check(integer_in(1, 256));
  app.add_flag("--bf16", s.bf16,
               "the matrix products in bfloat16, as gpt --bf16 (their rows are marked [bf16])");
  examples::parse_flags(app, argc, argv);
  if (s.n_embd % s.n_head != 0)
    throw examples::FlagError("--n-head " + std::to_string(s.n_head) + ": must divide --n-embd " +
                              std::to_string(s.n_embd));
  return s;
}

int run(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  keep_freed_memory(true);  // a training process reuses its freed buffers (memory.hpp)
  set_num_threads(static_cast<int>(s.threads));
  manual_seed(0);
  tt::GPT model(tt::GPTConfig(s.vocab, s.block_size).n_layer(s.n_layer).n_head(s.n_head).n_embd(
      s.n_embd));
  const tt::ParameterGroups groups = model.parameter_groups();
  const auto adamw = optim::AdamWOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.1);
  optim::AdamW opt(
      {{groups.decay, adamw}, {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}});

  std::mt19937_64 rng(0);
  std::uniform_int_distribution<std::int64_t> token(0, s.vocab - 1);
  const auto B = std::size_t(s.batch_size), T = std::size_t(s.block_size);
  auto step = [&] {
    IndexArray x = IndexArray::from_shape({B, T}), y = x;
    for (auto& v : x) v = token(rng);
    for (auto& v : y) v = token(rng);
    {
      std::optional<autocast::bf16> mixed;  // forward and backward, as gpt --bf16
      if (s.bf16) mixed.emplace();
      Tensor loss = model.loss(x, y);
      loss.backward();
    }
    optim::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    opt.zero_grad();
  };

  for (std::int64_t i = 0; i < s.warmup; ++i) step();  // buffers allocated, caches filled
  autograd::Profiler prof;
  for (std::int64_t i = 0; i < s.steps; ++i) step();
  prof.stop();
  std::cout << "A GPT training step (" << s.n_layer << " layers, " << s.n_head << " heads, width "
            << s.n_embd << ", batch " << s.batch_size << " x " << s.block_size
            << (s.bf16 ? ", products in bf16" : "") << "), " << s.steps << " step"
            << (s.steps == 1 ? "" : "s") << ":\n"
            << prof;
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("profile_step", [&] { return run(argc, argv); });
}
