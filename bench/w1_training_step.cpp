// bench/w1_training_step.cpp: W1 (docs/benchmarks.md), the toy model's training step, built from
// the real modules exactly as a user would write it:
//   Embeddings(V, D, padding_idx 0) * sqrt(D) -> PositionalEncoding(D, dropout 0.1, max_len 5000)
//   -> Linear(D, C) -> mean cross-entropy over the non-padding positions (ignore_index -100)
//   Adam(lr 1e-3, betas (0.9, 0.98), eps 1e-9); one step = zero_grad, forward, loss, backward, step.
// Data: B rows of T ids drawn from [1, V), the last quarter of every row padding (id 0); the
// label of a position is id % C. Figure: median ms per step over 20 steps after 5 warm-up steps.
//
// Figures (select with --only; default all):
//   W1-S, W1-M, W1-L                    dense: Adam for every parameter (the canonical figures)
//   W1-S-sparse, W1-M-sparse, ...       Embedding(sparse = true), SparseAdam for the embedding
//                                       and Adam for the rest
//   W1-S-fwd, W1-M-fwd, W1-L-fwd        forward + loss alone (training mode, no recording),
//                                       the denominator of "a step costs at most 4x its forward"
// Each line also reports the loss, the parameter count, the tape size after backward (must be 0)
// and the process's peak resident memory so far.
#include <sys/resource.h>

#include <bit>
#include <cmath>
#include <memory>

#include <tapegrad/tapegrad.hpp>

#include "bench_common.hpp"

using namespace tapegrad;

namespace {

struct Size {
  const char* name;
  std::size_t V, D, B, T, C;
};
constexpr Size kSizes[] = {
    {"S", 1000, 64, 16, 32, 16}, {"M", 10000, 512, 32, 128, 16}, {"L", 32000, 512, 64, 256, 64}};

class ToyModel : public nn::Module {
 public:
  ToyModel(const Size& s, bool sparse, std::shared_ptr<Generator> gen)
      : embed(
            register_module("embed", std::make_shared<nn::Embeddings>(
                                         nn::EmbeddingOptions(std::int64_t(s.V), std::int64_t(s.D))
                                             .padding_idx(0)
                                             .sparse(sparse),
                                         gen))),
        pos(register_module(
            "pos", std::make_shared<nn::PositionalEncoding>(std::int64_t(s.D), 0.1, 5000, gen))),
        proj(register_module("proj",
                             std::make_shared<nn::Linear>(
                                 nn::LinearOptions(std::int64_t(s.D), std::int64_t(s.C)), gen))) {}

  Tensor forward(const IndexArray& ids) { return proj->forward(pos->forward(embed->forward(ids))); }

  std::shared_ptr<nn::Embeddings> embed;
  std::shared_ptr<nn::PositionalEncoding> pos;
  std::shared_ptr<nn::Linear> proj;
};

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

enum class Mode { dense, sparse, forward };

void run(const Size& s, Mode mode, const bench::Args& args) {
  auto gen = std::make_shared<Generator>(0);
  ToyModel model(s, mode == Mode::sparse, gen);
  model.train();
  nn::CrossEntropyLoss criterion;  // ignore_index -100, mean over the rest

  const optim::AdamOptions adam = optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9);
  std::unique_ptr<optim::Optimizer> dense_opt, sparse_opt;
  if (mode == Mode::sparse) {
    std::vector<Parameter> rest;
    for (const auto& [name, p] : model.named_parameters())
      if (name != "embed.lut.weight") rest.push_back(p);
    sparse_opt = std::make_unique<optim::SparseAdam>(
        std::vector<Parameter>{model.embed->lut->weight},
        optim::SparseAdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
    dense_opt = std::make_unique<optim::Adam>(rest, adam);
  } else {
    dense_opt = std::make_unique<optim::Adam>(model.parameters(), adam);
  }

  Generator data(1);
  IndexArray ids = IndexArray::from_shape({s.B, s.T});
  IndexArray labels = IndexArray::from_shape({s.B * s.T});
  for (std::size_t b = 0; b < s.B; ++b)
    for (std::size_t t = 0; t < s.T; ++t) {
      const std::size_t p = b * s.T + t;
      const bool pad = t >= s.T - s.T / 4;  // the last quarter of every row
      ids.data()[p] = pad ? 0 : data.randint(1, std::int64_t(s.V));
      labels.data()[p] = pad ? -100 : ids.data()[p] % std::int64_t(s.C);
    }
  const std::vector<std::int64_t> flat{std::int64_t(s.B * s.T), std::int64_t(s.C)};

  const int warmup = 5, iters = 20;
  std::vector<double> seconds;
  float loss_value = 0.0f;
  std::size_t tape_after = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    const double t0 = bench::now_seconds();
    if (mode == Mode::forward) {
      autograd::NoGradGuard no_grad;
      loss_value = criterion.forward(ops::reshape(model.forward(ids), flat), labels).item();
    } else {
      dense_opt->zero_grad();
      if (sparse_opt) sparse_opt->zero_grad();
      Tensor loss = criterion.forward(ops::reshape(model.forward(ids), flat), labels);
      loss.backward();
      tape_after = autograd::tape().size();
      dense_opt->step();
      if (sparse_opt) sparse_opt->step();
      loss_value = loss.item();
    }
    const double t1 = bench::now_seconds();
    if (it >= warmup) seconds.push_back(t1 - t0);
  }
  std::size_t n_params = 0;
  for (const Parameter& p : model.parameters()) n_params += p.numel();
  const char* suffix = mode == Mode::sparse ? "-sparse" : mode == Mode::forward ? "-fwd" : "";
  char extra[192];
  std::snprintf(extra, sizeof extra,
                " loss=%.4f loss_bits=%08x params=%zu tape_after_backward=%zu maxrss_kb=%ld",
                loss_value, std::bit_cast<std::uint32_t>(loss_value), n_params, tape_after,
                max_rss_kb());
  bench::print_ms(std::string("W1-") + s.name + suffix, args.threads, seconds, warmup, extra);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv);
  for (const Size& s : kSizes) {
    const std::string name = std::string("W1-") + s.name;
    if (args.wants(name)) run(s, Mode::dense, args);
    if (args.wants(name + "-sparse")) run(s, Mode::sparse, args);
    if (args.wants(name + "-fwd")) run(s, Mode::forward, args);
  }
  return 0;
}
