// tests/tools/resumable_training.cpp
//
// A small training run that saves an io::TrainingCheckpoint every few steps and, when started
// again, resumes from it: the process the SIGKILL test (tests/io/test_checkpoint.cpp) kills at
// random moments. However often it is killed and restarted, the weights it finally writes must
// be bit-identical to those of one uninterrupted run.
//
//   resumable_training --checkpoint run.safetensors --final final.safetensors
//                      [--steps 120] [--every 3] [--die-after-step S]
//
// The model is the toy training's (Embeddings -> PositionalEncoding with dropout -> Linear), trained
// with Adam and the Noam schedule on random batches; dropout and data draw from their own
// generators, both tracked by the checkpoint. --die-after-step S makes the process SIGKILL itself
// right after step S (a crash at a known moment). A checkpoint that cannot be loaded stops the
// program with a message and exit status 1, leaving every file as it was.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;

namespace {
constexpr std::int64_t kVocab = 32, kDModel = 48, kRows = 16, kCols = 24;

struct ToyModel : nn::Module {
  ToyModel(std::shared_ptr<Generator> init, std::shared_ptr<Generator> dropout)
      : embed(register_module("embed",
                              std::make_shared<nn::Embeddings>(
                                  nn::EmbeddingOptions(kVocab, kDModel).padding_idx(0), init))),
        pos(register_module(
            "pos", std::make_shared<nn::PositionalEncoding>(
                       nn::PositionalEncodingOptions(kDModel, 0.1).max_len(kCols), dropout))),
        out(register_module(
            "out", std::make_shared<nn::Linear>(nn::LinearOptions(kDModel, kVocab), init))) {}
  Tensor forward(const IndexArray& ids) { return out->forward(pos->forward(embed->forward(ids))); }
  std::shared_ptr<nn::Embeddings> embed;
  std::shared_ptr<nn::PositionalEncoding> pos;
  std::shared_ptr<nn::Linear> out;
};

// kRows x kCols ids from [1, vocab), the last quarter of each row padding; targets = ids.
IndexArray draw_batch(Generator& data) {
  IndexArray ids = IndexArray::from_shape({std::size_t(kRows), std::size_t(kCols)});
  for (std::size_t r = 0; r < std::size_t(kRows); ++r)
    for (std::size_t c = 0; c < std::size_t(kCols); ++c)
      ids(r, c) = c >= 3 * kCols / 4 ? 0 : data.randint(1, kVocab);
  return ids;
}

int usage(const char* why) {
  std::cerr << "resumable_training: " << why
            << "\nusage: resumable_training --checkpoint PATH --final PATH "
            << "[--steps N] [--every K] [--die-after-step S]\n";
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  std::string checkpoint, final_path;
  std::int64_t steps = 120, every = 3, die_after = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--checkpoint")
      checkpoint = value;
    else if (key == "--final")
      final_path = value;
    else if (key == "--steps")
      steps = std::stoll(value);
    else if (key == "--every")
      every = std::stoll(value);
    else if (key == "--die-after-step")
      die_after = std::stoll(value);
    else
      return usage(("unknown option " + key).c_str());
  }
  if (argc % 2 == 0) return usage("every option takes a value");
  if (checkpoint.empty() || final_path.empty() || every <= 0)
    return usage("--checkpoint and --final are required");

  // Seeds fixed here, so a fresh start is the same run every time.
  auto init = std::make_shared<Generator>(1), dropout = std::make_shared<Generator>(2),
       data = std::make_shared<Generator>(3);
  ToyModel model(init, dropout);
  optim::Adam adam(model.parameters(), optim::AdamOptions(1.0).betas({0.9, 0.98}).eps(1e-9));
  optim::LambdaLR sched(adam, [](std::int64_t e) { return optim::noam(e, kDModel, 1.0, 20); });
  io::TrainingCheckpoint ckpt(model, adam, &sched);
  ckpt.add_generator("dropout", dropout).add_generator("data", data);

  std::int64_t step = 0;
  if (std::filesystem::exists(checkpoint)) {
    try {
      step = ckpt.load(checkpoint).step;
    } catch (const std::exception& e) {
      std::cerr << "resumable_training: cannot resume from '" << checkpoint << "':\n  " << e.what()
                << "\nThe file is left as it is; move it away to start from scratch.\n";
      return 1;
    }
    std::cout << "resumed from step " << step << std::endl;
  } else {
    std::cout << "starting from scratch" << std::endl;
  }

  for (; step < steps; ++step) {
    const IndexArray ids = draw_batch(*data);
    IndexArray target = IndexArray::from_shape({ids.size()});
    std::copy(ids.begin(), ids.end(), target.begin());
    Tensor logits = ops::reshape(model.forward(ids), {-1, kVocab});
    Tensor loss = ops::cross_entropy(logits, target, ops::CrossEntropyOptions().ignore_index(0));
    loss.backward();
    adam.step();
    adam.zero_grad();
    sched.step();
    if ((step + 1) % every == 0) ckpt.save(checkpoint, {step + 1, step + 1});
    if (step + 1 == die_after) ::kill(::getpid(), SIGKILL);
  }
  io::save(model, final_path);
  std::cout << "done: " << steps << " steps, weights in '" << final_path << "'" << std::endl;
  return 0;
}
