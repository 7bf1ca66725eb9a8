// examples/tape_of_a_training_step.cpp: one training step of the toy model, opened up.
//
// The forward records one tape entry per op, naming the module that ran it; the tensors own those
// entries (the loss holds the last, which holds its inputs, and so on back to the parameters).
// backward() replays the entries the loss reaches, newest-first, each adding into its inputs'
// gradients, and consumes them; the optimizer then moves each parameter that has a gradient. This
// program prints the tape, the gradients backward left, and what the Adam step changed: exactly
// the embedding rows of the words in the batch, never the padding row, never the
// positional-encoding buffer.
//
//     build/examples/tape_of_a_training_step
//
// It exits non-zero if any of those facts does not hold.
#include <cmath>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "common/checked_main.hpp"

#include "toy_training/language.hpp"
#include "toy_training/measure.hpp"
#include "toy_training/model.hpp"

using namespace tapegrad;
using namespace toy;

namespace {

// The largest |a - b| over one row of two (rows, d) tables, or over all of two arrays.
double max_change(const Array& a, const Array& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, double(std::abs(a.data()[i] - b.data()[i])));
  return m;
}

void print_batch(const Language& lang, const Batch& batch) {
  std::cout << "The batch: ids (" << batch.ids.shape()[0] << ", " << batch.ids.shape()[1]
            << "), padded with <pad> = 0; each word's tag is its meaning and its role\n";
  for (std::size_t i = 0; i < batch.ids.shape()[0]; ++i) {
    std::cout << "  sentence " << i << ":";
    for (std::size_t t = 0; t < batch.ids.shape()[1]; ++t) {
      const std::int64_t target = batch.targets(i, t);
      std::cout << "  " << lang.word(batch.ids(i, t)) << " -> "
                << (target == kIgnore ? "(ignored)" : lang.tag_name(target));
    }
    std::cout << '\n';
  }
}

}  // namespace

namespace {
int run() {
  // A tiny version of toy_training's model, so that every shape fits on a line.
  const Language lang(/*vocab=*/7, /*synonyms=*/3);  // <pad>, A1 A2 A3, B1 B2 B3
  ToyModel model(
      ModelOptions{lang.vocab(), /*d_model=*/4, lang.num_tags(), /*dropout=*/0.1, /*max_len=*/16},
      std::make_shared<Generator>(0));
  optim::Adam opt(model.parameters(), optim::AdamOptions(0.01).betas({0.9, 0.98}).eps(1e-9));
  nn::CrossEntropyLoss criterion;
  const Batch batch = make_batch(lang, {{1, 4, 2, 5}, {4, 1}});  // A3 and B3 are not in it
  print_batch(lang, batch);

  // ---- forward: every op records one entry, owned by the tensor it produced ----
  const Tensor logits = model.forward(batch.ids);
  const Tensor loss = criterion.forward(logits, flat(batch.targets));
  std::cout << "\nThe forward recorded this tape, printed newest entry first, the order in which "
               "backward() will replay it:\n"
            << autograd::tape() << "loss = " << loss.item() << "\n";
  const std::size_t recorded = autograd::tape_of(loss).size();

  // ---- backward: newest entry first; leaves receive .grad; the entries are consumed ----
  const nn::StateDict before = model.state_dict();
  loss.backward();
  std::cout << "\nbackward() ran the " << recorded
            << " entries and consumed them; the tape now holds " << autograd::tape().size()
            << ". Gradients landed on the parameters only:\n";
  for (const auto& [name, p] : model.named_parameters())
    std::cout << "  " << name << " " << str(p.shape()) << ": gradient "
              << (p.has_grad() ? "yes" : "no") << '\n';
  const Buffer& pe = model.pos->pe;
  std::cout << "  pos.pe " << str(pe.shape()) << " (a buffer): gradient "
            << (pe.has_grad() ? "yes" : "no") << '\n';

  const Array& dweight = model.embed->lut->weight.grad();
  std::set<std::int64_t> words_in_batch, rows_with_gradient, rows_moved;
  for (const std::int64_t id : batch.ids)
    if (id != kPad) words_in_batch.insert(id);
  for (std::int64_t id = 0; id < lang.vocab(); ++id)
    for (std::size_t j = 0; j < dweight.shape()[1]; ++j)
      if (dweight(std::size_t(id), j) != 0) rows_with_gradient.insert(id);

  // ---- the optimizer step: only parameters move, each by what its gradient says ----
  opt.step();
  opt.zero_grad();
  std::cout << "\nAfter one Adam step (lr 0.01), the largest change of each tensor:\n";
  for (const auto& [name, value] : model.state_dict())
    std::cout << "  " << name << ": " << max_change(value, before.at(name)) << '\n';
  const Array& weight = model.embed->lut->weight.data();
  std::cout << "Rows of embed.lut.weight:\n";
  for (std::int64_t id = 0; id < lang.vocab(); ++id) {
    const bool moved = !same_bits_row(weight, before.at("embed.lut.weight"), std::size_t(id));
    if (moved) rows_moved.insert(id);
    const char* why =
        words_in_batch.count(id) ? " (in the batch)"
        : id == kPad             ? " (padding_idx: no gradient)"
                     : " (not in the batch: a zero gradient, and Adam's moments are still zero)";
    std::cout << "  " << id << " " << lang.word(id) << ": " << (moved ? "moved" : "unchanged")
              << why << '\n';
  }

  // ---- the facts this program shows, checked ----
  const bool ok = autograd::tape().empty() && rows_with_gradient == words_in_batch &&
                  rows_moved == words_in_batch && row_is_plus_zero(weight, kPad) &&
                  same_bits(pe.data(), before.at("pos.pe")) && !pe.has_grad();
  std::cout << '\n'
            << (ok ? "As expected: the tape is empty, exactly the rows of the batch's words got a "
                     "gradient and moved, the padding row is still zero and pe is unchanged.\n"
                   : "UNEXPECTED: see the tables above.\n");
  return ok ? 0 : 1;
}
}  // namespace

int main() { return examples::checked_main("tape_of_a_training_step", run); }
