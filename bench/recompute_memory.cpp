// bench/recompute_memory.cpp: what activation recompute (autograd::checkpoint around each block,
// model.recompute(true)) saves in memory and costs in time, on one training step of a model with
// random weights. A program, not a test: it prints figures.
//
//     OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/bench/recompute_memory
//         [--model smollm2|gpt2] [--batch 4] [--seq 512] [--steps 2]
//
// smollm2: SmolLM2-135M's shapes (LlamaForCausalLM: hidden 576, 30 layers, 9 heads, 3 key/value
// heads, intermediate 1536, vocabulary 49,152, tied, rope_theta 100000); gpt2: GPT-2 small's (the
// GPT: 12 layers, 12 heads, width 768, vocabulary 50,257, context 1024). Every weight trains.
//
// Each setting runs in a child process of its own (fork), which builds the model, makes one step
// to allocate the gradients (kept, zeroed, as an optimizer loop keeps them), returns free heap
// memory to the system (malloc_trim) and resets the kernel's peak-RSS mark, then measures --steps
// steps (the figures are the last step's; times their median):
//   activations  resident memory after the forward, less before it: what the graph keeps for
//                backward (the activations, and the logits and the loss's own)
//   step peak    the highest resident memory during forward and backward, less before the forward
//   fwd+bwd      the time of forward and backward: wall clock, and the process's CPU time (what a
//                machine shared with other work does not inflate)
// Each setting once without recompute and once with, then their ratios.
#include <fcntl.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "process_memory.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

double status_bytes(const std::string& key) { return bench::status_bytes("recompute_memory", key); }
void reset_peak() { bench::reset_peak("recompute_memory"); }

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Figures {
  double activations = 0, peak = 0, wall = 0, cpu = 0, loss = 0;
};

IndexArray random_ids(std::size_t B, std::size_t T, std::int64_t vocab, Generator& g) {
  IndexArray a = IndexArray::from_shape({B, T});
  for (auto& id : a) id = g.randint(0, vocab);
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class Model>
Figures measure_steps(Model& model, std::size_t B, std::size_t T, int steps) {
  Generator data(1);
  const std::int64_t V = model.vocab_size();
  {  // the gradients' buffers, as a training loop holds them from its first step on
    const IndexArray x = random_ids(B, T, V, data), y = random_ids(B, T, V, data);
    model.loss(x, y).backward();
    model.zero_grad(/*set_to_none=*/false);
  }
  Figures f;
  std::vector<double> walls, cpus;
  for (int s = 0; s < steps; ++s) {
    const IndexArray x = random_ids(B, T, V, data), y = random_ids(B, T, V, data);
    ::malloc_trim(0);
    reset_peak();
    const double before = status_bytes("VmRSS");
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    {
      const Tensor loss = model.loss(x, y);
      f.activations = status_bytes("VmRSS") - before;
      f.loss = loss.item();
      loss.backward();
    }
    cpus.push_back(cpu_seconds() - c0);
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    f.peak = status_bytes("VmHWM") - before;
    model.zero_grad(/*set_to_none=*/false);
  }
  f.wall = median(walls);
  f.cpu = median(cpus);
  return f;
}

// Runs one setting in a child process; its figures come back through a pipe.
Figures in_child(const std::string& model_name, bool recompute, std::size_t B, std::size_t T,
                 int steps) {
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("recompute_memory: pipe");
    std::exit(2);
  }
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("recompute_memory: fork");
    std::exit(2);
  }
  if (child == 0) {
    ::close(fds[0]);
    try {
      Figures f;
      auto gen = std::make_shared<Generator>(0);
      if (model_name == "smollm2") {
        const auto config = tt::LlamaConfig()
                                .vocab_size(49152)
                                .hidden_size(576)
                                .intermediate_size(1536)
                                .num_hidden_layers(30)
                                .num_attention_heads(9)
                                .num_key_value_heads(3)
                                .max_position_embeddings(std::max<std::int64_t>(2048, T))
                                .rope_theta(100000)
                                .rms_norm_eps(1e-5)
                                .tie_word_embeddings(true);
        tt::LlamaForCausalLM model(config, gen);
        model.recompute(recompute);
        f = measure_steps(model, B, T, steps);
      } else {
        tt::GPT model(tt::GPTConfig(50257, 1024).n_layer(12).n_head(12).n_embd(768), gen);
        model.recompute(recompute);
        f = measure_steps(model, B, T, steps);
      }
      if (::write(fds[1], &f, sizeof f) != sizeof f) ::_exit(1);
      ::_exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "recompute_memory: %s\n", e.what());
      ::_exit(1);
    }
  }
  ::close(fds[1]);
  Figures f;
  const bool read_all = ::read(fds[0], &f, sizeof f) == sizeof f;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!read_all || !WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(1);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "smollm2";
  std::size_t B = 4, T = 512;
  int steps = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model" && (value == "smollm2" || value == "gpt2"))
      model = value;
    else if (flag == "--batch")
      B = std::size_t(std::atoi(value.c_str()));
    else if (flag == "--seq")
      T = std::size_t(std::atoi(value.c_str()));
    else if (flag == "--steps")
      steps = std::max(1, std::atoi(value.c_str()));
    else {
      std::cerr << "usage: recompute_memory [--model smollm2|gpt2] [--batch 4] [--seq 512] "
                   "[--steps 2]\n";
      return 2;
    }
  }
  if (argc % 2 == 0 || B == 0 || T == 0) {
    std::cerr << "usage: recompute_memory [--model smollm2|gpt2] [--batch 4] [--seq 512] "
                 "[--steps 2]\n";
    return 2;
  }
  std::printf("%s, batch %zu x %zu, %d thread(s), median of %d step(s)\n", model.c_str(), B, T,
              get_num_threads(), steps);
  const Figures plain = in_child(model, false, B, T, steps);
  const Figures re = in_child(model, true, B, T, steps);
  for (const auto& [label, f] : {std::pair{"plain", plain}, std::pair{"recompute", re}})
    std::printf(
        "%-10s activations %8.1f MB  step peak %8.1f MB  fwd+bwd %7.2f s wall %7.2f s cpu"
        "  loss %.6f\n",
        label, f.activations / 1e6, f.peak / 1e6, f.wall, f.cpu, f.loss);
  std::printf(
      "recompute / plain: activations %.3f  step peak %.3f  fwd+bwd time %.3f wall %.3f "
      "cpu\n",
      re.activations / plain.activations, re.peak / plain.peak, re.wall / plain.wall,
      re.cpu / plain.cpu);
  return 0;
}
