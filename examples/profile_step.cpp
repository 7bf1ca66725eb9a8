// examples/profile_step.cpp: where the time of a GPT training step goes, op by op.
//
// Builds the GPT of examples/gpt at its default size (4 layers, 4 heads, width 128, a context of
// 64 characters, batches of 12 windows) over a 96-character vocabulary, feeds it random tokens,
// takes two warm-up steps, then profiles three steps: forward, backward, gradient clipping and
// AdamW, as examples/gpt trains. It prints autograd::Profiler's table: per op and pass, calls,
// time, share of the three steps, and GFLOP/s or GB/s against this machine's peak, measured once
// (docs/engine.md#the-profiler says what each column counts).
//
//     build/examples/profile_step
#include <cstdint>
#include <exception>
#include <iostream>
#include <random>

#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

int main() try {
  keep_freed_memory(true);  // a training process reuses its freed buffers (memory.hpp)
  const std::int64_t vocab = 96, T = 64, B = 12;
  manual_seed(0);
  tt::GPT model(tt::GPTConfig(vocab, T).n_layer(4).n_head(4).n_embd(128));
  const tt::ParameterGroups groups = model.parameter_groups();
  const auto adamw = optim::AdamWOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.1);
  optim::AdamW opt(
      {{groups.decay, adamw}, {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}});

  std::mt19937_64 rng(0);
  std::uniform_int_distribution<std::int64_t> token(0, vocab - 1);
  auto step = [&] {
    IndexArray x = IndexArray::from_shape({std::size_t(B), std::size_t(T)}), y = x;
    for (auto& v : x) v = token(rng);
    for (auto& v : y) v = token(rng);
    Tensor loss = model.loss(x, y);
    loss.backward();
    optim::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    opt.zero_grad();
  };

  for (int i = 0; i < 2; ++i) step();  // warm-up: buffers allocated, caches filled
  autograd::Profiler prof;
  for (int i = 0; i < 3; ++i) step();
  prof.stop();
  std::cout << "A GPT training step (4 layers, 4 heads, width 128, batch 12 x 64), 3 steps:\n"
            << prof;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "profile_step: " << e.what() << '\n';
  return 2;
}
