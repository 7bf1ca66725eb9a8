// bench/llama_bench.cpp: a Llama from a Hugging Face folder, timed: loading it, sampling with the
// cache, and training steps (every weight, LoRA adapters, LoRA with recompute). A program, not a
// test: it prints figures. bench/llama_compare runs it beside the PyTorch peer
// (bench/llama_torch.py), on SmolLM2-135M's shapes with random weights.
//
//     build/bench/llama_bench load DIR
//     build/bench/llama_bench sample DIR [--prompt 64] [--tokens 256]
//     build/bench/llama_bench train DIR [--batch-size 4] [--block-size 512] [--steps 3]
//                                       [--lora-r 8] [--recompute]
//     --bf16 (any task but load): forward and backward under autocast::bf16, as PyTorch's
//     torch.autocast("cpu", dtype=torch.bfloat16) on the peer's side
//
// load: pretrained::load_llama, its time and the peak resident memory (VmHWM) against the
// weights' size. sample: a prompt of random ids, then new tokens with the key-value cache
// (temperature 1, top-k 200); the prompt's pass and the generation timed apart. train: AdamW
// (lr 1e-4, weight decay 0.1 on the matrices) over random ids, dropout 0, each step forward,
// cross-entropy, backward, optimizer step, zero_grad; with --lora-r, adapters of that rank on
// q_proj, k_proj, v_proj and o_proj (lora_alpha 2 r), the rest frozen; with --recompute, every
// decoder layer under autograd::checkpoint. The median step after 1 warm-up step, the peak
// resident memory, and the activation memory of one more forward (resident memory after it less
// before it, freed memory given back to the system). With --bf16 the weights' bf16 copies, which
// the autocast scope keeps while it lasts, are made first by a forward that records nothing, and
// reported apart (bf16_weight_copies_mb): they are weights, the same with or without recompute.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

double status_mb(const std::string& key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  return 0.0;
}

double weights_mb(const std::string& dir) {
  struct stat st {};
  const std::string path = dir + "/model.safetensors";
  return ::stat(path.c_str(), &st) == 0 ? double(st.st_size) / (1024.0 * 1024.0) : 0.0;
}

IndexArray random_ids(std::size_t B, std::size_t T, std::int64_t V, Generator& gen) {
  IndexArray a = IndexArray::from_shape({B, T});
  for (auto& v : a) v = gen.randint(0, V - 1);
  return a;
}

int load(const std::string& dir) {
  const double t0 = bench::now_seconds();
  const pretrained::PretrainedLlama llama = pretrained::load_llama(dir);
  const double seconds = bench::now_seconds() - t0;
  std::printf(
      "llama_bench result: task=load seconds=%.3f peak_rss_mb=%.1f file_mb=%.1f params=%lld\n",
      seconds, status_mb("VmHWM"), weights_mb(dir),
      static_cast<long long>(llama.model->num_params()));
  return 0;
}

int sample(const std::string& dir, std::int64_t prompt, std::int64_t tokens, bool bf16) {
  pretrained::PretrainedLlama llama = pretrained::load_llama(dir);
  std::optional<autocast::bf16> mixed;
  if (bf16) mixed.emplace();
  tt::LlamaForCausalLM& model = *llama.model;
  model.eval();
  Generator ids(1);
  const IndexArray idx = random_ids(1, std::size_t(prompt), model.vocab_size(), ids);
  autograd::NoGradGuard no_grad;
  model.reset_cache();
  model.forward_cached(idx);  // (the buffers' first allocation, as gpt_sample does)
  model.reset_cache();
  double t0 = bench::now_seconds();
  model.forward_cached(idx);
  const double prompt_seconds = bench::now_seconds() - t0;
  model.reset_cache();
  Generator gen(0);
  t0 = bench::now_seconds();
  const IndexArray out =
      model.generate(idx, tt::GenerateOptions(tokens).temperature(1.0).top_k(200), gen);
  const double total = bench::now_seconds() - t0;
  std::printf(
      "llama_bench result: task=sample prompt_tokens=%lld new_tokens=%lld "
      "prompt_tokens_per_s=%.1f tokens_per_s=%.1f peak_rss_mb=%.1f\n",
      static_cast<long long>(prompt), static_cast<long long>(out.shape()[1] - idx.shape()[1]),
      double(prompt) / prompt_seconds, double(tokens) / (total - prompt_seconds),
      status_mb("VmHWM"));
  return 0;
}

int train(const std::string& dir, std::int64_t B, std::int64_t T, int steps, std::int64_t lora_r,
          bool recompute, bool bf16) {
  pretrained::PretrainedLlama llama = pretrained::load_llama(dir);
  tt::LlamaForCausalLM& model = *llama.model;
  if (lora_r > 0)
    nn::add_lora(model, {"q_proj", "k_proj", "v_proj", "o_proj"},
                 nn::LoRAOptions(lora_r).lora_alpha(2.0 * double(lora_r)));
  model.recompute(recompute);
  model.train();
  const nn::ParameterGroups groups = model.parameter_groups();
  const auto adamw = optim::AdamWOptions(1e-4).weight_decay(0.1);
  std::vector<optim::AdamW::Group> g;
  if (!groups.decay.empty()) g.push_back({groups.decay, adamw});
  if (!groups.no_decay.empty())
    g.push_back({groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)});
  optim::AdamW opt(g);
  Generator gen(0);
  std::vector<double> seconds;
  double activations = 0.0, weight_copies = 0.0, loss_last = 0.0;
  for (int step = 0; step < steps + 1; ++step) {
    const IndexArray x = random_ids(std::size_t(B), std::size_t(T), model.vocab_size(), gen),
                     y = random_ids(std::size_t(B), std::size_t(T), model.vocab_size(), gen);
    const double t0 = bench::now_seconds();
    Tensor loss;
    {
      std::optional<autocast::bf16> mixed;  // the products of forward and backward; AdamW in fp32
      if (bf16) mixed.emplace();
      loss = model.loss(x, y);
      loss.backward();
    }
    opt.step();
    opt.zero_grad();
    if (step >= 1) seconds.push_back(bench::now_seconds() - t0);
    loss_last = loss.item();
  }
  // The activations of one more forward, measured with freed memory given back to the system
  // (while it is kept for reuse, as in the timed steps, a forward's resident memory does not grow).
  {
    tapegrad::keep_freed_memory(false);
    const IndexArray x = random_ids(std::size_t(B), std::size_t(T), model.vocab_size(), gen),
                     y = random_ids(std::size_t(B), std::size_t(T), model.vocab_size(), gen);
    std::optional<autocast::bf16> mixed;
    if (bf16) mixed.emplace();
    if (bf16) {  // the weights' bf16 copies, kept for the scope, are weights, not activations:
      const double start = status_mb("VmRSS");  // a forward that records nothing makes them
      autograd::NoGradGuard no_grad;
      (void)model.loss(x, y);
      weight_copies = status_mb("VmRSS") - start;
    }
    const double before = status_mb("VmRSS");
    Tensor loss = model.loss(x, y);
    activations = status_mb("VmRSS") - before;
    loss.backward();
    opt.zero_grad();
  }
  const bench::Stats s = bench::stats(seconds);
  std::int64_t trained = 0;
  for (const Parameter& p : model.parameters())
    if (p.requires_grad()) trained += std::int64_t(p.numel());
  std::printf(
      "llama_bench result: task=train batch=%lld block=%lld lora_r=%lld recompute=%d bf16=%d "
      "steps=%d step_ms_median=%.1f tokens_per_s=%.1f loss_last=%.4f peak_rss_mb=%.1f "
      "activations_mb=%.1f bf16_weight_copies_mb=%.1f trained_params=%lld\n",
      static_cast<long long>(B), static_cast<long long>(T), static_cast<long long>(lora_r),
      recompute ? 1 : 0, bf16 ? 1 : 0, steps, s.median * 1e3, double(B * T) / s.median, loss_last,
      status_mb("VmHWM"), activations, weight_copies, static_cast<long long>(trained));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s load DIR | sample DIR [--prompt N] [--tokens N] [--bf16] | train DIR "
                 "[--batch-size B] [--block-size T] [--steps N] [--lora-r R] [--recompute] "
                 "[--bf16]\n",
                 argv[0]);
    return 2;
  }
  const std::string task = argv[1], dir = argv[2];
  std::int64_t B = 4, T = 512, prompt = 64, tokens = 256, lora_r = 0;
  int steps = 3;
  bool recompute = false, bf16 = false;
  try {
    for (int i = 3; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--recompute" || flag == "--bf16") {
        (flag == "--bf16" ? bf16 : recompute) = true;
        continue;
      }
      if (i + 1 >= argc) {
        std::fprintf(stderr, "llama_bench: %s: expected a value\n", flag.c_str());
        return 2;
      }
      const std::string value = argv[++i];
      std::int64_t* target = flag == "--batch-size"   ? &B
                             : flag == "--block-size" ? &T
                             : flag == "--prompt"     ? &prompt
                             : flag == "--tokens"     ? &tokens
                             : flag == "--lora-r"     ? &lora_r
                                                      : nullptr;
      if (flag == "--steps")
        steps = int(bench::parse_positive(flag, value));
      else if (target != nullptr)
        *target = bench::parse_positive(flag, value);
      else {
        std::fprintf(stderr, "llama_bench: unknown flag %s\n", flag.c_str());
        return 2;
      }
    }
    set_num_threads(1);
    tapegrad::keep_freed_memory(true);  // as the programs do (memory.hpp)
    if (task == "load") return load(dir);
    if (task == "sample") return sample(dir, prompt, tokens, bf16);
    if (task == "train") return train(dir, B, T, steps, lora_r, recompute, bf16);
    std::fprintf(stderr, "llama_bench: unknown task %s (load, sample or train)\n", task.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llama_bench: %s\n", e.what());
    return 2;
  }
}
