// bench/gpt2_bench.cpp: GPT-2 from a Hugging Face folder, timed: loading it, and fine-tuning it a
// few steps. A program, not a test: it prints figures. bench/gpt2_compare runs it beside the
// PyTorch peer (bench/gpt2_torch.py), on GPT-2 124M's shapes with random weights.
//
//     build/bench/gpt2_bench load DIR
//     build/bench/gpt2_bench finetune DIR [--batch-size 4] [--block-size 256] [--steps 12]
//                                         [--threads 1] [--bf16]
//
// load: pretrained::load_gpt2 of the folder, the time it takes and the peak resident memory
// (VmHWM) against the size of model.safetensors.
// finetune: the training step of examples/gpt on the loaded model (train mode, dropout 0, AdamW
// with betas (0.9, 0.95), weight decay 0.1 on the matrices, lr 3e-5, no clipping; forward and
// backward inside an autocast::bf16 scope with --bf16) over random
// windows of random ids (the time of a step does not depend on the ids), each step: forward,
// cross-entropy, backward, optimizer step, zero_grad. The median step after 2 warm-up steps, the
// tokens per second, the peak resident memory, and nanoGPT's FLOPs per token for windows of
// --block-size (6 N + 12 L n_embd T, N the parameters but the position table), which
// bench/gpt2_compare divides by the sgemm peak for the MFU.
//
// Lines:
//     gpt2_bench result: task=load seconds=1.234 peak_rss_mb=512.3 file_mb=497.8
//     gpt2_bench result: task=finetune batch=4 block=256 bf16=0 steps=12 step_ms_median=...
//         tokens_per_s=... loss_first=... loss_last=... peak_rss_mb=... flops_per_token=...
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {

double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0.0;
}

double file_mb(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? double(st.st_size) / (1024.0 * 1024.0) : 0.0;
}

int load(const std::string& dir) {
  const double t0 = bench::now_seconds();
  const pretrained::PretrainedGPT2 gpt2 = pretrained::load_gpt2(dir);
  const double seconds = bench::now_seconds() - t0;
  std::printf(
      "gpt2_bench result: task=load seconds=%.3f peak_rss_mb=%.1f file_mb=%.1f params=%lld\n",
      seconds, peak_rss_mb(), file_mb(dir + "/model.safetensors"),
      static_cast<long long>(gpt2.model->num_params(false)));
  return 0;
}

int finetune(const std::string& dir, std::int64_t B, std::int64_t T, int steps, bool bf16) {
  pretrained::PretrainedGPT2 gpt2 = pretrained::load_gpt2(dir, /*dropout=*/0.0);
  tt::GPT& model = *gpt2.model;
  if (T > model.config().block_size()) {
    std::fprintf(stderr, "--block-size %lld: expected at most n_positions %lld\n",
                 static_cast<long long>(T), static_cast<long long>(model.config().block_size()));
    return 2;
  }
  model.train();
  const tt::ParameterGroups groups = model.parameter_groups();
  const auto adamw = optim::AdamWOptions(3e-5).betas({0.9, 0.95}).weight_decay(0.1);
  optim::AdamW opt(
      {{groups.decay, adamw}, {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}});
  Generator gen(0);
  const std::int64_t V = model.config().vocab_size();
  std::vector<double> seconds;
  double first = 0.0, last = 0.0;
  for (int step = 0; step < steps + 2; ++step) {
    IndexArray x = IndexArray::from_shape({std::size_t(B), std::size_t(T)}), y = x;
    for (auto& v : x) v = gen.randint(0, V - 1);
    for (auto& v : y) v = gen.randint(0, V - 1);
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
    const double dt = bench::now_seconds() - t0;
    if (step >= 2) seconds.push_back(dt);
    (step == 0 ? first : last) = loss.item();
  }
  const bench::Stats s = bench::stats(seconds);
  const double C = double(model.config().n_embd()), L = double(model.config().n_layer());
  const double flops =
      6.0 * double(model.num_params(/*non_embedding=*/true)) + 12.0 * L * C * double(T);
  std::printf(
      "gpt2_bench result: task=finetune batch=%lld block=%lld bf16=%d steps=%d "
      "step_ms_median=%.1f tokens_per_s=%.1f loss_first=%.4f loss_last=%.4f peak_rss_mb=%.1f "
      "flops_per_token=%.0f\n",
      static_cast<long long>(B), static_cast<long long>(T), bf16 ? 1 : 0, steps, s.median * 1e3,
      double(B * T) / s.median, first, last, peak_rss_mb(), flops);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s load DIR | finetune DIR [--batch-size B] [--block-size T] "
                 "[--steps N] [--threads N] [--bf16]\n",
                 argv[0]);
    return 2;
  }
  const std::string task = argv[1], dir = argv[2];
  std::int64_t B = 4, T = 256, steps = 12, threads = 1;
  bool bf16 = false;
  try {
    for (int i = 3; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--bf16") {
        bf16 = true;
        continue;
      }
      std::int64_t* target = flag == "--batch-size"   ? &B
                             : flag == "--block-size" ? &T
                             : flag == "--steps"      ? &steps
                             : flag == "--threads"    ? &threads
                                                      : nullptr;
      if (target == nullptr) {
        std::fprintf(stderr, "gpt2_bench: unknown flag %s\n", flag.c_str());
        return 2;
      }
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpt2_bench: %s: expected a value\n", flag.c_str());
        return 2;
      }
      *target = bench::parse_positive(flag, argv[++i]);
    }
    set_num_threads(int(threads));
    tapegrad::keep_freed_memory(true);  // as a training program does (memory.hpp)
    if (task == "load") return load(dir);
    if (task == "finetune") return finetune(dir, B, T, int(steps), bf16);
    std::fprintf(stderr, "unknown task %s (load or finetune)\n", task.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2_bench: %s\n", e.what());
    return 2;
  }
}
