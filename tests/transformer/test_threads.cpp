// tests/transformer/test_threads.cpp: the thread count changes no bit of training. A step of the
// toy model (sized so that every kernel on its path splits its work) and a step of the GPT give
// bit-identical losses, gradients and parameters with one thread and with two. The pool itself is
// tested in tests/core/test_threads.cpp.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::bit_equal;

namespace {
struct StepResult {
  float loss;
  std::vector<Array> grads, params;
};

// Embeddings(V, D, pad 0) -> PositionalEncoding(D, 0.1) -> Linear(D, C) -> cross_entropy, Adam,
// with B * T * D = 2^18 elements: above every kernel's threshold for splitting.
StepResult toy_step(int threads, bool sparse) {
  set_num_threads(threads);
  const std::size_t V = 3000, D = 512, B = 8, T = 64, C = 64;
  auto gen = std::make_shared<Generator>(3);
  auto embed = std::make_shared<nn::Embeddings>(
      nn::EmbeddingOptions(V, D).padding_idx(0).sparse(sparse), gen);
  auto pos = std::make_shared<nn::PositionalEncoding>(D, 0.1, 100, gen);
  auto proj = std::make_shared<nn::Linear>(nn::LinearOptions(D, C), gen);
  IndexArray ids = IndexArray::from_shape({B, T});
  IndexArray labels = IndexArray::from_shape({B * T});
  Generator data(4);
  for (std::size_t p = 0; p < B * T; ++p) {
    ids.data()[p] = (p % T) >= T - T / 4 ? 0 : data.randint(1, V);
    labels.data()[p] = ids.data()[p] == 0 ? -100 : ids.data()[p] % std::int64_t(C);
  }
  std::vector<Parameter> params{embed->lut->weight, proj->weight, proj->bias};
  Tensor logits = ops::reshape(proj->forward(pos->forward(embed->forward(ids))),
                               {std::int64_t(B * T), std::int64_t(C)});
  Tensor loss = ops::cross_entropy(logits, labels);
  loss.backward();
  StepResult r{loss.item(), {}, {}};
  for (const Parameter& p : params) r.grads.push_back(p.grad_dense());
  if (sparse) {
    optim::SparseAdam({params[0]}).step();
    optim::Adam({params[1], params[2]}).step();
  } else {
    optim::Adam(params, optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9)).step();
  }
  for (const Parameter& p : params) r.params.push_back(p.data());
  set_num_threads(1);
  return r;
}
}  // namespace

TEST_SUITE("threads") {
  TEST_CASE("a training step gives bit-identical results with one thread and with two") {
    for (bool sparse : {false, true}) {
      const StepResult one = toy_step(1, sparse), two = toy_step(2, sparse);
      CHECK(one.loss == two.loss);
      for (std::size_t i = 0; i < one.grads.size(); ++i) {
        CHECK_MESSAGE(bit_equal(one.grads[i], two.grads[i]), "gradient ", i, ", sparse ", sparse);
        CHECK_MESSAGE(bit_equal(one.params[i], two.params[i]), "parameter ", i, ", sparse ",
                      sparse);
      }
    }
  }
}

TEST_SUITE("threads") {
  TEST_CASE(
      "a GPT training step gives bit-identical loss, gradients and weights with one thread and "
      "with two") {
    namespace tt = tapegrad::nn::transformer;
    auto step = [](int threads) {
      set_num_threads(threads);
      // sizes at which every kernel splits its work: GEMMs of 2 blocks, attention pairs, GELU, LayerNorm rows
      tt::GPT model(tt::GPTConfig(65, 32).n_layer(2).n_head(4).n_embd(128).dropout(0.1),
                    std::make_shared<Generator>(5));
      const tt::ParameterGroups groups = model.parameter_groups();
      const auto adamw = optim::AdamWOptions(1e-3).betas({0.9, 0.99});
      optim::AdamW opt({{groups.decay, optim::AdamWOptions(adamw).weight_decay(0.1)},
                        {groups.no_decay, optim::AdamWOptions(adamw).weight_decay(0.0)}});
      IndexArray x = IndexArray::from_shape({8, 32}), y = IndexArray::from_shape({8, 32});
      Generator data(6);
      for (auto& v : x) v = data.randint(0, 65);
      for (auto& v : y) v = data.randint(0, 65);
      Tensor loss = model.loss(x, y);
      loss.backward();
      optim::clip_grad_norm_(model.parameters(), 1.0);
      StepResult r{loss.item(), {}, {}};
      for (const Parameter& p : model.parameters()) r.grads.push_back(p.grad());
      opt.step();
      for (const Parameter& p : model.parameters()) r.params.push_back(p.data());
      set_num_threads(1);
      return r;
    };
    const StepResult one = step(1), two = step(2);
    CHECK(one.loss == two.loss);
    REQUIRE(one.grads.size() == two.grads.size());
    for (std::size_t i = 0; i < one.grads.size(); ++i) {
      CHECK_MESSAGE(bit_equal(one.grads[i], two.grads[i]), "gradient ", i);
      CHECK_MESSAGE(bit_equal(one.params[i], two.params[i]), "parameter ", i);
    }
  }
}
