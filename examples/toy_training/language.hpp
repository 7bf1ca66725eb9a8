// examples/toy_training/language.hpp: the toy language the example trains on, built in (nothing
// to download). Its words come in groups of synonyms (A1 A2 A3 A4 mean "A"), id 0 is padding,
// and word frequencies follow Zipf's law as in a real language: each meaning has a common word
// (A1) and rarer synonyms. A sentence is 4 to 12 random words.
//
// The task: tag every word with its MEANING and its ROLE. Every sentence opens with a phrase of
// three words (role "open"); the words after it have role "rest". So the right tag needs what the
// word means (its embedding) and where it stands (the positional encoding): knowing only the
// word, or only the position, caps the accuracy well below what the model reaches.
//
// Shapes: a batch holds ids (B, T) and targets (B, T), T the longest sentence of the batch,
// shorter sentences padded with id 0 whose target is kIgnore, so the loss skips them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.hpp>

namespace toy {

using tapegrad::Generator;
using tapegrad::IndexArray;

constexpr std::int64_t kPad = 0;            // the padding id (Embedding's padding_idx)
constexpr std::int64_t kIgnore = -100;      // the target of a pad position (PyTorch's ignore_index)
constexpr std::int64_t kOpeningLength = 3;  // positions 0, 1, 2 have role "open"
constexpr std::int64_t kMinLength = 4, kMaxLength = 12;

using Sentence = std::vector<std::int64_t>;  // word ids, no padding

class Language {
 public:
  /// Words 1 .. vocab-1 in groups of `synonyms` consecutive ids (the last group may be smaller).
  Language(std::int64_t vocab, std::int64_t synonyms) : vocab_(vocab), synonyms_(synonyms) {
    groups_ = (vocab - 1 + synonyms - 1) / synonyms;
    // Zipf: the word of frequency rank r has weight 1 / r. Ranks interleave the groups, so that
    // every meaning has a common first word and rarer synonyms: A1 B1 C1 ... A2 B2 C2 ...
    cumulative_.resize(static_cast<std::size_t>(vocab));
    double total = 0.0;
    for (std::int64_t id = 1; id < vocab; ++id) {
      total += 1.0 / static_cast<double>(synonym_index(id) * groups_ + group(id) + 1);
      cumulative_[static_cast<std::size_t>(id)] = total;
    }
    for (double& c : cumulative_) c /= total;
  }

  std::int64_t vocab() const { return vocab_; }
  std::int64_t groups() const { return groups_; }
  std::int64_t num_tags() const { return 2 * groups_; }  // (meaning, role) pairs
  std::int64_t group(std::int64_t id) const { return (id - 1) / synonyms_; }
  std::int64_t synonym_index(std::int64_t id) const { return (id - 1) % synonyms_; }
  bool synonyms(std::int64_t a, std::int64_t b) const { return a != b && group(a) == group(b); }

  /// The tag of `id` at position `pos`: 2 * meaning + role (0 = open, 1 = rest).
  std::int64_t tag(std::int64_t id, std::int64_t pos) const {
    return 2 * group(id) + (pos < kOpeningLength ? 0 : 1);
  }
  /// "A1", "B3", ..., "AA2" after "Z": a group letter (or two) and the synonym's number.
  std::string word(std::int64_t id) const {
    if (id == kPad) return "<pad>";
    return group_name(group(id)) + std::to_string(synonym_index(id) + 1);
  }
  std::string tag_name(std::int64_t tag) const {
    return group_name(tag / 2) + (tag % 2 == 0 ? "/open" : "/rest");
  }

  /// A random word, drawn by its Zipf frequency.
  std::int64_t random_word(Generator& g) const {
    // The first id whose cumulative probability exceeds u (the last one if rounding leaves none).
    const auto it =
        std::upper_bound(cumulative_.begin() + 1, cumulative_.end() - 1, g.uniform_double());
    return it - cumulative_.begin();
  }
  Sentence random_sentence(Generator& g) const {
    Sentence s(static_cast<std::size_t>(g.randint(kMinLength, kMaxLength + 1)));
    for (std::int64_t& id : s) id = random_word(g);
    return s;
  }

 private:
  static std::string group_name(std::int64_t g) {
    std::string name;
    for (std::int64_t n = g + 1; n > 0; n = (n - 1) / 26)
      name.insert(name.begin(), char('A' + (n - 1) % 26));
    return name;
  }

  std::int64_t vocab_, synonyms_, groups_;
  std::vector<double> cumulative_;  // cumulative_[id]: P(word <= id)
};

/// A corpus split in two: the model trains on `train` and is measured on `held_out`, sentences
/// it never saw.
struct Corpus {
  std::vector<Sentence> train, held_out;
};

inline Corpus make_corpus(const Language& lang, std::size_t train_size, std::size_t held_out_size,
                          std::uint64_t seed) {
  Generator g(seed);
  Corpus c;
  for (std::size_t i = 0; i < train_size; ++i) c.train.push_back(lang.random_sentence(g));
  for (std::size_t i = 0; i < held_out_size; ++i) c.held_out.push_back(lang.random_sentence(g));
  return c;
}

struct Batch {
  IndexArray ids;           // (B, T), padded with kPad
  IndexArray targets;       // (B, T), kIgnore at padding
  std::int64_t tokens = 0;  // non-padding positions
};

/// Pads the sentences to the longest one and tags every word.
inline Batch make_batch(const Language& lang, const std::vector<Sentence>& sentences) {
  std::size_t T = 0;
  for (const Sentence& s : sentences) T = std::max(T, s.size());
  Batch b;
  b.ids = IndexArray::from_shape({sentences.size(), T});
  b.targets = IndexArray::from_shape({sentences.size(), T});
  for (std::size_t i = 0; i < sentences.size(); ++i)
    for (std::size_t t = 0; t < T; ++t) {
      const bool word = t < sentences[i].size();
      b.ids(i, t) = word ? sentences[i][t] : kPad;
      b.targets(i, t) = word ? lang.tag(sentences[i][t], std::int64_t(t)) : kIgnore;
      b.tokens += word;
    }
  return b;
}

/// The batch of training step `step`: `batch_size` sentences drawn from the training split by a
/// generator seeded from (seed, step). Because a batch depends on nothing but its step number,
/// a run resumed from a checkpoint at step k sees exactly the batches an unbroken run sees.
inline Batch training_batch(const Language& lang, const Corpus& corpus, std::size_t batch_size,
                            std::uint64_t seed, std::int64_t step) {
  Generator g(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(step));
  std::vector<Sentence> picked;
  for (std::size_t i = 0; i < batch_size; ++i)
    picked.push_back(
        corpus.train[static_cast<std::size_t>(g.randint(0, std::int64_t(corpus.train.size())))]);
  return make_batch(lang, picked);
}

/// The held-out split in batches of `batch_size` sentences, in order.
inline std::vector<Batch> held_out_batches(const Language& lang, const Corpus& corpus,
                                           std::size_t batch_size) {
  std::vector<Batch> batches;
  for (std::size_t i = 0; i < corpus.held_out.size(); i += batch_size) {
    const auto first = corpus.held_out.begin() + std::ptrdiff_t(i);
    const auto last =
        corpus.held_out.begin() + std::ptrdiff_t(std::min(i + batch_size, corpus.held_out.size()));
    batches.push_back(make_batch(lang, std::vector<Sentence>(first, last)));
  }
  return batches;
}

}  // namespace toy
