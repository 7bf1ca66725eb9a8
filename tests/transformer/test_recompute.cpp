// tests/transformer/test_recompute.cpp: activation recompute in the models. With recompute(true)
// each GPT Block and each Llama decoder layer runs under autograd::checkpoint: the step keeps one
// entry per block, and the loss, the gradients and the dropout layers' counters are those of the
// plain run bit for bit, dropout on, on every kernel set. A learner's own module under checkpoint
// gets the same; a model that does not implement recompute refuses it.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../capability_guard.hpp"
#include "../helpers.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;
using tapegrad::testing::bit_equal;
using tapegrad::testing::CapabilityGuard;

namespace {

IndexArray ids(std::size_t B, std::size_t T, std::int64_t vocab, std::int64_t seed) {
  IndexArray a = IndexArray::from_shape({B, T});
  for (std::size_t i = 0; i < a.size(); ++i)
    a.data()[i] = (seed * 7 + std::int64_t(i) * 5 + std::int64_t(i * i) % 3) % vocab;
  return a;
}

// Every parameter's gradient, and every dropout layer's stream, of a and b are the same bits.
void check_same_state(const nn::Module& a, const nn::Module& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i].first);
    REQUIRE(pa[i].second.has_grad());
    CHECK(bit_equal(pa[i].second.grad(), pb[i].second.grad()));
  }
  const auto ma = a.named_modules(), mb = b.named_modules();
  for (std::size_t i = 0; i < ma.size(); ++i)
    if (const auto* da = dynamic_cast<const nn::Dropout*>(ma[i].second)) {
      const auto* db = dynamic_cast<const nn::Dropout*>(mb[i].second);
      CAPTURE(ma[i].first);
      CHECK(da->seed() == db->seed());
      CHECK(da->calls() == db->calls());
    }
}

// Two micro-batches, each loss backpropagated (the gradients accumulate): plain and recomputed
// models built from the same seed give the same losses, gradients and dropout counters.
template <class Model>
void check_recompute_is_exact(Model& plain, Model& recomputed, std::int64_t vocab) {
  recomputed.recompute(true);
  for (std::int64_t step = 0; step < 2; ++step) {
    const IndexArray x = ids(2, 12, vocab, step), y = ids(2, 12, vocab, step + 5);
    const Tensor l_plain = plain.loss(x, y), l_recomputed = recomputed.loss(x, y);
    CHECK(bit_equal(l_plain.data(), l_recomputed.data()));
    l_plain.backward();
    l_recomputed.backward();
  }
  check_same_state(plain, recomputed);
}

tt::GPTConfig small_gpt() {
  return tt::GPTConfig(23, 16).n_layer(3).n_head(2).n_embd(16).dropout(0.1);
}

tt::LlamaConfig small_llama() {
  return tt::LlamaConfig()
      .vocab_size(23)
      .hidden_size(16)
      .intermediate_size(24)
      .num_hidden_layers(3)
      .num_attention_heads(4)
      .num_key_value_heads(2)
      .max_position_embeddings(16)
      .attention_dropout(0.1);
}

std::size_t count_op(const autograd::Tape& tape, const std::string& op) {
  std::size_t n = 0;
  for (const auto& e : tape.entries()) n += e.op == op;
  return n;
}

// A learner's block: its own Linear, GELU and Dropout, nothing of the library's blocks.
class MyBlock : public nn::Module {
 public:
  explicit MyBlock(std::shared_ptr<Generator> g)
      : fc(register_module("fc", std::make_shared<nn::Linear>(nn::LinearOptions(8, 16), g))),
        act(register_module("act", std::make_shared<nn::GELU>())),
        drop(register_module("drop", std::make_shared<nn::Dropout>(0.2, g))),
        proj(register_module("proj", std::make_shared<nn::Linear>(nn::LinearOptions(16, 8), g))) {}
  Tensor forward(const Tensor& x) {
    autograd::ModuleScope scope(type_name(), path());
    return x + proj->forward(drop->forward(act->forward(fc->forward(x))));
  }
  std::string type_name() const override { return "MyBlock"; }
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::GELU> act;
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::Linear> proj;
};

class MyModel : public nn::Module {
 public:
  MyModel() : gen(std::make_shared<Generator>(3)) {
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < 3; ++i) blocks->push_back(std::make_shared<MyBlock>(gen));
  }
  Tensor forward(const Tensor& x, bool recompute) {
    Tensor h = x;
    for (const auto& m : *blocks) {
      auto& block = static_cast<MyBlock&>(*m);
      h = recompute ? autograd::checkpoint(
                          [&block](const std::vector<Tensor>& in) { return block.forward(in[0]); },
                          {h})
                    : block.forward(h);
    }
    return h;
  }
  std::shared_ptr<Generator> gen;
  std::shared_ptr<nn::ModuleList> blocks;
};

}  // namespace

TEST_SUITE("transformer.recompute") {
  TEST_CASE("a GPT with recompute gives the plain run's bits, dropout 0.1, on every kernel set") {
    CapabilityGuard guard;
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      for (const char* parts : {"gpt2", "llama pieces"}) {
        CAPTURE(parts);
        tt::GPTConfig c = small_gpt();
        if (std::string(parts) != "gpt2") c.position("rope").norm("rmsnorm").mlp("swiglu");
        tt::GPT plain(c, std::make_shared<Generator>(1)), recomputed(c, std::make_shared<Generator>(1));
        check_recompute_is_exact(plain, recomputed, 23);
      }
    }
  }

  TEST_CASE("a Llama with recompute gives the plain run's bits, attention dropout 0.1, on every "
            "kernel set") {
    CapabilityGuard guard;
    for (CpuCapability set : available_cpu_capabilities()) {
      CAPTURE(to_string(set));
      set_cpu_capability(set);
      tt::LlamaForCausalLM plain(small_llama(), std::make_shared<Generator>(2)),
          recomputed(small_llama(), std::make_shared<Generator>(2));
      check_recompute_is_exact(plain, recomputed, 23);
    }
  }

  TEST_CASE("with recompute, a step keeps one entry per block instead of the block's") {
    tt::GPT plain(small_gpt(), std::make_shared<Generator>(1)),
        recomputed(small_gpt(), std::make_shared<Generator>(1));
    recomputed.recompute(true);
    CHECK(recomputed.recompute());
    CHECK(!plain.recompute());
    const IndexArray x = ids(2, 12, 23, 0), y = ids(2, 12, 23, 1);
    const autograd::Tape t_plain = autograd::tape_of(plain.loss(x, y));
    const autograd::Tape t_recomputed = autograd::tape_of(recomputed.loss(x, y));
    CHECK(count_op(t_plain, "checkpoint") == 0);
    CHECK(count_op(t_recomputed, "checkpoint") == 3);
    CHECK(count_op(t_recomputed, "causal_self_attention") == 0);
    // Outside the blocks: the embeddings, their dropout, ln_f, the head, the loss.
    CHECK(t_recomputed.size() + 3 * 10 < t_plain.size());
  }

  TEST_CASE("the attention weights are still given, the blocks then run plainly") {
    tt::GPT model(small_gpt(), std::make_shared<Generator>(1));
    model.recompute(true);
    model.eval();
    std::vector<Array> weights;
    const Tensor f = model.features(ids(1, 5, 23, 0), &weights);
    CHECK(weights.size() == 3);
    CHECK(count_op(autograd::tape_of(f), "checkpoint") == 0);
  }

  TEST_CASE("a learner's own blocks under checkpoint: the plain run's bits, dropout on") {
    MyModel plain, recomputed;
    const Tensor x_plain = testing::input({4, 5, 8}, 9), x_recomputed = testing::input({4, 5, 8}, 9);
    for (int step = 0; step < 2; ++step) {
      const Tensor a = plain.forward(x_plain, false), b = recomputed.forward(x_recomputed, true);
      CHECK(bit_equal(a.data(), b.data()));
      ops::sum(a * a).backward();
      ops::sum(b * b).backward();
    }
    check_same_state(plain, recomputed);
    CHECK(bit_equal(x_plain.grad(), x_recomputed.grad()));
  }

  TEST_CASE("a model that does not implement recompute refuses it, naming it") {
    class Bare : public tt::CausalLM {
     public:
      std::int64_t vocab_size() const override { return 2; }
      std::int64_t block_size() const override { return 2; }
      Tensor forward(const IndexArray&) override { return Tensor(); }
      Array forward_cached(const IndexArray&) override { return Array(); }
      void reset_cache() override {}
      std::string type_name() const override { return "Bare"; }
    } bare;
    CHECK_THROWS_WITH_AS(bare.recompute(true),
                         doctest::Contains("Bare.recompute: expected a model whose blocks run under "
                                           "autograd::checkpoint"),
                         ValueError);
    bare.recompute(false);  // off is what it does
    CHECK(!bare.recompute());
  }
}  // TEST_SUITE
