// tests/distributed/tools/ddp_training.cpp
//
// A small data-parallel training run that tests/distributed/launch/test_launch.cpp starts with
// mpirun and breaks on purpose: one rank SIGKILLs itself, stops (SIGSTOP), or throws. Rank 0
// saves an io::TrainingCheckpoint every few steps; started again, every rank resumes from it,
// on any number of ranks.
//
//   mpirun -np 2 ddp_training --checkpoint run.safetensors --final final.safetensors
//          [--steps 30] [--every 5] [--batch 4] [--timeout SECONDS]
//          [--die-rank R --die-after-step S]      SIGKILL itself right after step S
//          [--stop-rank R --stop-after-step S]    SIGSTOP itself (a rank that no longer answers)
//          [--throw-rank R --throw-after-step S]  throw an exception
//
// The model and data are those of the distributed tests (tests/distributed/models.hpp), with no
// dropout, so each step depends only on the weights, the optimizer and the data position: a run
// killed and resumed on the same number of ranks ends with the same bits as one uninterrupted run.
// The data position (examples consumed in the epoch by all ranks together) is what lets a run
// resume on another number of ranks.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include <tapegrad/distributed.hpp>
#include <tapegrad/tapegrad.hpp>

#include "../models.hpp"

using namespace tapegrad;
using namespace ddp_test;

namespace {
constexpr std::size_t kExamples = 64, kLength = 8;
constexpr std::int64_t kVocab = 16;

int usage(const std::string& why) {
  std::cerr << "ddp_training: " << why
            << "\nusage: ddp_training --checkpoint PATH --final PATH [--steps N] "
            << "[--every K] [--batch B] [--timeout S] [--{die,stop,throw}-rank R "
               "--{die,stop,throw}-after-step S]\n";
  return 2;
}

int train(const std::map<std::string, std::string>& flags) {
  auto flag = [&](const std::string& key, std::int64_t fallback) {
    const auto it = flags.find(key);
    return it == flags.end() ? fallback : std::stoll(it->second);
  };
  const std::string checkpoint = flags.at("--checkpoint"), final_path = flags.at("--final");
  const std::int64_t steps = flag("--steps", 30), every = flag("--every", 5),
                     B = flag("--batch", 4);
  const int r = distributed::rank(), n = distributed::world_size();
  if (flags.count("--timeout")) distributed::set_timeout(std::stod(flags.at("--timeout")));

  const IndexArray data = make_dataset(kExamples, kLength, kVocab, 3);
  TinyLM model(TinyOptions{}, 11);
  optim::Adam adam(model.parameters(), optim::AdamOptions(1e-2));
  io::TrainingCheckpoint ckpt(model, adam);
  std::int64_t step = 0, epoch = 0, position = 0;
  if (std::filesystem::exists(checkpoint)) {  // every rank reads the file rank 0 wrote
    const io::TrainingProgress p = ckpt.load(checkpoint);
    step = p.step;
    position = p.data_position;
    epoch = std::stoll(p.extra.at("epoch"));
    if (r == 0) std::cout << "resumed from step " << step << " on " << n << " rank(s)" << std::endl;
  } else if (r == 0) {
    std::cout << "starting from scratch on " << n << " rank(s)" << std::endl;
  }
  distributed::DistributedDataParallel ddp(model);
  distributed::DistributedSampler sampler(kExamples,
                                          distributed::DistributedSamplerOptions().seed(5));

  for (; step < steps; ++step) {
    if (position + B * n > sampler.total_size()) {  // the epoch's last partial batch is skipped
      ++epoch;
      position = 0;
    }
    sampler.set_epoch(epoch);
    Tensor loss =
        loss_of(model, rows(data, sampler.indices(position), 0, static_cast<std::size_t>(B)));
    loss.backward();  // gradients averaged over the ranks
    adam.step();
    adam.zero_grad();
    position += B * n;
    const double mean_loss =
        distributed::all_reduce(static_cast<double>(loss.item()), distributed::ReduceOp::average);
    if (r == 0) std::cout << "step " << step + 1 << " loss " << mean_loss << std::endl;
    if ((step + 1) % every == 0) {
      if (r == 0)
        ckpt.save(checkpoint,
                  io::TrainingProgress(step + 1, position, {{"epoch", std::to_string(epoch)}}));
      distributed::barrier();  // written, whole, before anyone says so
      distributed::set_failure_note(
          "last checkpoint: " + checkpoint + ", written after step " + std::to_string(step + 1) +
          "; to resume, run the same command again (on any number of ranks)");
    }
    const auto breaks_here = [&](const std::string& what) {
      return flag("--" + what + "-rank", -1) == r &&
             flag("--" + what + "-after-step", -1) == step + 1;
    };
    if (breaks_here("die")) ::kill(::getpid(), SIGKILL);
    if (breaks_here("stop")) ::kill(::getpid(), SIGSTOP);
    if (breaks_here("throw"))
      throw std::runtime_error("ddp_training: an error on purpose on rank " + std::to_string(r) +
                               " after step " + std::to_string(step + 1));
  }
  if (r == 0) {
    io::save(model, final_path);
    std::cout << "done: " << steps << " steps, weights in '" << final_path << "'" << std::endl;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  distributed::Environment mpi(argc, argv);
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  if (argc % 2 == 0) return usage("every option takes a value");
  if (!flags.count("--checkpoint") || !flags.count("--final"))
    return usage("--checkpoint and --final are required");
  try {
    return train(flags);
  } catch (const std::exception& e) {
    distributed::abort(e.what());  // ends every rank, not just this one
  }
}
