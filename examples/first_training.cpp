// examples/first_training.cpp: the seed tutorials' model, trained, in one page. Start here.
//
//     build/examples/first_training
//
// The model is the tutorials' pipeline: token ids -> Embeddings (a learned row per token, times
// sqrt(d_model); the padding token's row is zero and never learns) -> PositionalEncoding (a fixed
// table of sines and cosines added to each position, then Dropout) -> Linear -> logits. The task
// is the simplest there is: predict the token you were given. Then the program checks the two
// facts of the tutorials: the embeddings learned, and the positional encoding did not change.
// (toy_training is the same idea on a harder task, with a full report and checkpoints.)
#include <cstdio>
#include <iostream>
#include <memory>

#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"

using namespace tapegrad;

constexpr std::int64_t kVocab = 11, kDModel = 16, kPad = 0, kRows = 16, kLength = 12, kSteps = 200;

// The model, as PyTorch would write it: three registered children, one forward.
class TinyLM : public nn::Module {
 public:
  TinyLM()
      : embed(
            register_module("embed", std::make_shared<nn::Embeddings>(
                                         nn::EmbeddingOptions(kVocab, kDModel).padding_idx(kPad)))),
        pos(register_module("pos",
                            std::make_shared<nn::PositionalEncoding>(kDModel, /*dropout=*/0.1,
                                                                     /*max_len=*/64))),
        out(register_module("out", std::make_shared<nn::Linear>(kDModel, kVocab))) {}

  Tensor forward(const IndexArray& ids) {  // ids (B, T) -> logits (B*T, vocab)
    Tensor x = embed->forward(ids);        // (B, T, d_model): learned
    x = pos->forward(x);                   // + fixed positions, then dropout
    return ops::reshape(out->forward(x), {-1, kVocab});
  }

  std::shared_ptr<nn::Embeddings> embed;        // parameter embed.lut.weight
  std::shared_ptr<nn::PositionalEncoding> pos;  // buffer    pos.pe
  std::shared_ptr<nn::Linear> out;              // parameters out.weight, out.bias
};

// A batch: random ids in [1, vocab), the last quarter of each row padding; the target is the id.
IndexArray random_batch(Generator& gen) {
  IndexArray ids = IndexArray::from_shape({kRows, kLength});
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t t = 0; t < kLength; ++t)
      ids(r, t) = t < kLength * 3 / 4 ? gen.randint(1, kVocab) : kPad;
  return ids;
}

namespace {
int run() {
  manual_seed(0);  // the same run, bit for bit, every time
  TinyLM model;
  std::cout << model << '\n';

  // Adam with the tutorials' Noam schedule: the rate rises for 40 steps, then decays.
  optim::Adam adam(model.parameters(), optim::AdamOptions(1.0).betas({0.9, 0.98}).eps(1e-9));
  optim::LambdaLR schedule(adam,
                           [](std::int64_t step) { return optim::noam(step, kDModel, 1.0, 40); });
  nn::CrossEntropyLoss criterion(
      nn::CrossEntropyLossOptions().ignore_index(kPad));  // padding counts for nothing

  const Array embedding_before = model.embed->lut->weight.data();
  const std::uint64_t pe_before = model.pos->pe.fingerprint();
  Generator data(1);

  double first = 0, last = 0;
  for (std::int64_t step = 1; step <= kSteps; ++step) {
    const IndexArray ids = random_batch(data);
    IndexArray targets = ids;            // the target is the id itself,
    targets.reshape({kRows * kLength});  // one per row of the logits
    Tensor loss = criterion.forward(model.forward(ids), targets);
    loss.backward();  // gradients into the parameters
    adam.step();      // move them
    adam.zero_grad();
    schedule.step();
    last = loss.item();
    if (step == 1) first = last;
    if (step % 20 == 0 || step == 1)
      std::printf("step %3lld  loss %.4f\n", static_cast<long long>(step), last);
  }

  // The two facts of the tutorials, checked.
  const Array& embedding = model.embed->lut->weight.data();
  bool every_word_moved = true;
  for (std::int64_t id = 1; id < kVocab; ++id) {
    bool moved = false;
    for (std::int64_t j = 0; j < kDModel; ++j)
      moved = moved || embedding(id, j) != embedding_before(id, j);
    every_word_moved = every_word_moved && moved;
  }
  bool pad_is_zero = true;
  for (std::int64_t j = 0; j < kDModel; ++j)
    pad_is_zero = pad_is_zero && embedding(kPad, j) == 0.0f;
  const bool pe_unchanged = model.pos->pe.fingerprint() == pe_before;

  std::printf("\nloss %.4f -> %.4f\n", first, last);
  std::printf("%s every word's embedding row moved: the embeddings learned\n",
              every_word_moved ? "ok  " : "FAIL");
  std::printf("%s the padding row is still exactly zero: it never received a gradient\n",
              pad_is_zero ? "ok  " : "FAIL");
  std::printf(
      "%s pos.pe is bit for bit what it was (fingerprint 0x%016llx): a buffer is never trained\n",
      pe_unchanged ? "ok  " : "FAIL", static_cast<unsigned long long>(pe_before));
  const bool learned = last < 0.5 * first;
  std::printf("%s the loss fell below half of where it started\n", learned ? "ok  " : "FAIL");
  return every_word_moved && pad_is_zero && pe_unchanged && learned ? 0 : 1;
}
}  // namespace

int main() { return examples::checked_main("first_training", run); }
