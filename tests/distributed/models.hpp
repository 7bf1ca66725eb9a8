// tests/distributed/models.hpp: the small model and data the distributed tests train.
//
//   ids (B, T) -> embed: Embeddings(vocab, d), padding_idx 0 (row-sparse gradient if asked)
//              -> pos:   PositionalEncoding, no dropout
//              -> hidden: Linear(d, d), then tanh   (skipped when asked: an unused parameter)
//              -> out:    Linear(d, vocab)          -> logits (B*T, vocab)
// The task: each position's target is its own token (a copy), padding ignored. It trains in
// milliseconds a step, so a test can take 100 steps.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <tapegrad/distributed.hpp>
#include <tapegrad/tapegrad.hpp>

namespace ddp_test {

using namespace tapegrad;

struct TinyOptions {
  std::int64_t vocab = 16, d = 8, max_len = 16;
  bool sparse = false;  // Embedding(sparse = true)
  bool extra = false;   // one more parameter, "extra" (3,): a model the other ranks do not have
  std::int64_t hidden_out = 0;  // hidden's out_features if not d (then out takes that many inputs)
};

class TinyLM : public nn::Module {
 public:
  TinyLM(const TinyOptions& o, std::uint64_t seed)
      : generator_(std::make_shared<Generator>(seed)),
        embed(register_module(
            "embed",
            std::make_shared<nn::Embeddings>(
                nn::EmbeddingOptions(o.vocab, o.d).padding_idx(0).sparse(o.sparse), generator_))),
        pos(register_module(
            "pos", std::make_shared<nn::PositionalEncoding>(
                       nn::PositionalEncodingOptions(o.d, 0.0).max_len(o.max_len), generator_))),
        hidden(register_module(
            "hidden", std::make_shared<nn::Linear>(
                          nn::LinearOptions(o.d, o.hidden_out ? o.hidden_out : o.d), generator_))),
        out(register_module(
            "out",
            std::make_shared<nn::Linear>(
                nn::LinearOptions(o.hidden_out ? o.hidden_out : o.d, o.vocab), generator_))) {
    if (o.extra) extra = register_parameter("extra", Parameter(Array{1.0f, 2.0f, 3.0f}));
  }

  /// ids (B, T) -> logits (B*T, vocab). Without the hidden layer, its parameters get no gradient.
  Tensor forward(const IndexArray& ids, bool use_hidden = true) {
    Tensor x = pos->forward(embed->forward(ids));
    if (use_hidden) x = ops::tanh(hidden->forward(x));
    return ops::reshape(out->forward(x), {-1, out->options().out_features()});
  }

 private:
  std::shared_ptr<Generator> generator_;

 public:
  std::shared_ptr<nn::Embeddings> embed;
  std::shared_ptr<nn::PositionalEncoding> pos;
  std::shared_ptr<nn::Linear> hidden;
  std::shared_ptr<nn::Linear> out;
  Parameter extra;
};

/// `count` sequences of `length` tokens in [1, vocab), the last quarter of each padding (0).
inline IndexArray make_dataset(std::size_t count, std::size_t length, std::int64_t vocab,
                               std::uint64_t seed) {
  Generator g(seed);
  IndexArray data = IndexArray::from_shape({count, length});
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t t = 0; t < length; ++t)
      data(i, t) = t >= 3 * length / 4 ? 0 : g.randint(1, vocab);
  return data;
}

/// The rows idx[start], idx[start + 1], ... idx[start + count - 1] of data, as a batch.
inline IndexArray rows(const IndexArray& data, const std::vector<std::int64_t>& idx,
                       std::size_t start, std::size_t count) {
  const std::size_t length = data.shape()[1];
  IndexArray batch = IndexArray::from_shape({count, length});
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t t = 0; t < length; ++t)
      batch(i, t) = data(static_cast<std::size_t>(idx[start + i]), t);
  return batch;
}

/// The copy task's loss: cross-entropy of every position against its own token, padding ignored.
inline Tensor loss_of(TinyLM& model, const IndexArray& batch, bool use_hidden = true) {
  IndexArray target = IndexArray::from_shape({batch.size()});
  std::copy(batch.begin(), batch.end(), target.begin());
  return ops::cross_entropy(model.forward(batch, use_hidden), target,
                            ops::CrossEntropyOptions().ignore_index(0));
}

}  // namespace ddp_test
