// tests/transformer/test_generate.cpp: generate() on a CausalLM that is not a GPT: a one-head
// attention decoder written here from library pieces (Embedding, Linear, RotaryEmbedding,
// ops::causal_self_attention) with a key-value cache of its own. The cached sampler gives the
// tokens of the uncached one, calls only what the interface promises, and refuses bad logits.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
namespace tt = tapegrad::nn::transformer;

namespace {
IndexArray one(std::int64_t id) {  // a prompt (1, 1)
  IndexArray a = IndexArray::from_shape({1, 1});
  a(0, 0) = id;
  return a;
}
IndexArray ids2(std::int64_t a, std::int64_t b) {  // a prompt (1, 2)
  IndexArray p = IndexArray::from_shape({1, 2});
  p(0, 0) = a;
  p(0, 1) = b;
  return p;
}

// logits = head(x + attention(rotary(c_attn(x)))), x = wte(idx): one block, one head, no norm.
class TinyDecoder : public tt::CausalLM {
 public:
  TinyDecoder(std::int64_t vocab, std::int64_t block, std::int64_t C, std::uint64_t seed)
      : gen_(std::make_shared<Generator>(seed)),
        wte(register_module("wte",
                            std::make_shared<nn::Embedding>(nn::EmbeddingOptions(vocab, C), gen_))),
        c_attn(register_module("c_attn",
                               std::make_shared<nn::Linear>(nn::LinearOptions(C, 3 * C), gen_))),
        rotary(register_module(
            "rotary", std::make_shared<nn::RotaryEmbedding>(nn::RotaryEmbeddingOptions(C, block)))),
        head(register_module("head",
                             std::make_shared<nn::Linear>(nn::LinearOptions(C, vocab), gen_))),
        vocab_(vocab),
        block_(block),
        C_(std::size_t(C)) {}

  std::int64_t vocab_size() const override { return vocab_; }
  std::int64_t block_size() const override { return block_; }

  Tensor forward(const IndexArray& idx) override {
    ++forward_calls;
    const Tensor x = wte->forward(idx);
    const Tensor qkv = rotary->forward_qkv(c_attn->forward(x));
    return head->forward(x + ops::causal_self_attention(qkv, 1));
  }

  // The new positions' keys and values join the cache; each new query attends to all of it.
  Array forward_cached(const IndexArray& tokens) override {
    ++cached_calls;
    const std::size_t B = tokens.shape()[0], n = tokens.shape()[1], L = length_;
    const Tensor x = wte->forward(tokens);                                        // (B, n, C)
    const Tensor qkv = rotary->forward_qkv(c_attn->forward(x), std::int64_t(L));  // positions L..
    if (keys_.empty()) keys_.assign(B, {}), values_.assign(B, {});
    Array y = Array::from_shape({B, n, C_});
    const float scale = float(1.0 / std::sqrt(double(C_)));
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < n; ++i) {
        const float* row = qkv.data().data() + (b * n + i) * 3 * C_;
        keys_[b].insert(keys_[b].end(), row + C_, row + 2 * C_);
        values_[b].insert(values_[b].end(), row + 2 * C_, row + 3 * C_);
        const std::size_t seen = L + i + 1;
        std::vector<double> p(seen);
        double m = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (std::size_t j = 0; j < seen; ++j) {
          double dot = 0.0;
          for (std::size_t c = 0; c < C_; ++c) dot += double(row[c]) * keys_[b][j * C_ + c];
          p[j] = dot * scale;
          m = std::max(m, p[j]);
        }
        for (double& v : p) sum += v = std::exp(v - m);
        for (std::size_t c = 0; c < C_; ++c) {
          double acc = 0.0;
          for (std::size_t j = 0; j < seen; ++j) acc += p[j] / sum * values_[b][j * C_ + c];
          y(b, i, c) = float(acc);
        }
      }
    length_ = L + n;
    const Tensor out = head->forward(x + Tensor(std::move(y)));  // (B, n, vocab)
    Array last = Array::from_shape({B, std::size_t(vocab_)});
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t v = 0; v < std::size_t(vocab_); ++v) last(b, v) = out.data()(b, n - 1, v);
    return last;
  }

  void reset_cache() override {
    ++resets;
    keys_.clear();
    values_.clear();
    length_ = 0;
  }

  int forward_calls = 0, cached_calls = 0, resets = 0;

 private:
  std::shared_ptr<Generator> gen_;

 public:
  std::shared_ptr<nn::Embedding> wte;
  std::shared_ptr<nn::Linear> c_attn;
  std::shared_ptr<nn::RotaryEmbedding> rotary;
  std::shared_ptr<nn::Linear> head;

 private:
  std::int64_t vocab_, block_;
  std::size_t C_;
  std::vector<std::vector<float>> keys_, values_;  // per row: (positions, C)
  std::size_t length_ = 0;
};

// A decoder whose logits have one column too many.
class WrongWidth : public TinyDecoder {
 public:
  WrongWidth() : TinyDecoder(5, 4, 2, 0) {}
  Array forward_cached(const IndexArray& tokens) override {
    return xt::zeros<float>({tokens.shape()[0], std::size_t(6)});
  }
};
// A model whose logits overflow on the third token: infinity for token 2 of the vocabulary.
class Overflowing : public TinyDecoder {
 public:
  Overflowing() : TinyDecoder(5, 8, 2, 0) {}
  Array forward_cached(const IndexArray& tokens) override {
    Array logits = xt::zeros<float>({tokens.shape()[0], std::size_t(5)});
    if (++calls == 3) logits(0, 2) = std::numeric_limits<float>::infinity();
    return logits;
  }
  int calls = 0;
};
}  // namespace

TEST_SUITE("nn.transformer.generate") {
  TEST_CASE("a decoder of one's own samples with its cache the tokens it samples without") {
    TinyDecoder model(11, 6, 4, 3);
    const IndexArray prompt = {{1, 2}, {3, 4}};
    const auto options = tt::GenerateOptions(20).temperature(1.3);  // block 6: restarts
    Generator a(9), b(9);
    const IndexArray cached = tt::generate(model, prompt, options, a);
    CHECK(model.forward_calls == 0);  // the cache alone
    CHECK(model.cached_calls == 20);  // one call per token, refills included
    CHECK(model.resets >= 3);         // before, at each restart, after
    const IndexArray uncached =
        tt::generate(model, prompt, tt::GenerateOptions(options).use_cache(false), b);
    CHECK(model.forward_calls == 20);  // last_logits' default: the last position of forward()
    CHECK(cached.shape() == Shape{2, 22});
    CHECK(cached == uncached);
    for (std::int64_t id : cached) CHECK((0 <= id && id < 11));
  }

  TEST_CASE("generate restores training mode and leaves the cache empty") {
    TinyDecoder model(7, 8, 2, 1);
    Generator gen(0);
    model.train();
    tt::generate(model, one(1), tt::GenerateOptions(3), gen);
    CHECK(model.is_training());
    const int resets = model.resets;
    CHECK(resets >= 2);
    const std::size_t before = autograd::tape().size();
    tt::generate(model, one(1), tt::GenerateOptions(3), gen);
    CHECK(autograd::tape().size() == before);  // nothing recorded
  }

  TEST_CASE("generate refuses bad options, prompts and logits of the wrong shape") {
    TinyDecoder model(7, 8, 2, 1);
    Generator gen(0);
    CHECK_THROWS_WITH_AS(tt::generate(model, one(1), tt::GenerateOptions(3).top_k(0), gen),
                         doctest::Contains("TinyDecoder.generate: expected top_k >= 1, got 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(tt::generate(model, ids2(1, 7), tt::GenerateOptions(3), gen),
                         doctest::Contains("expected ids in [0, 7), got 7 at position (0, 1)"),
                         IndexError);
    WrongWidth wrong;
    CHECK_THROWS_WITH_AS(tt::generate(wrong, one(1), tt::GenerateOptions(1), gen),
                         doctest::Contains("expected the model's logits of shape (B, vocab_size) = "
                                           "(1, 5), got (1, 6)"),
                         ShapeError);
  }

  TEST_CASE("generate refuses logits that overflowed, naming the token and the step") {
    // Weights of 1e38 give infinite logits; sampling from them would be meaningless (PyTorch's
    // torch.multinomial refuses such probabilities too).
    Overflowing model;
    Generator gen(0);
    CHECK_THROWS_WITH_AS(tt::generate(model, one(1), tt::GenerateOptions(5), gen),
                         doctest::Contains(".generate: expected finite logits from the "
                                           "model, got inf for token 2 of batch row 0 after 2 "
                                           "generated tokens"),
                         ValueError);
  }

}  // TEST_SUITE
