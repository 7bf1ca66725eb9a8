// include/tapegrad/train/windows.hpp
//
// The batches of a language model, as nanoGPT's train.py draws them: windows of T + 1
// consecutive token ids, x the first T and y the next T (data/windows.hpp). Training draws B
// windows at random starts for every batch; validation scores a fixed set of windows, drawn once.
//
//     train::RandomWindows batches(train_tokens, T, B, data_generator);
//     train::Validation validation = train::fixed_windows(val_tokens, T, 480, B, /*seed=*/1);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tapegrad/core/random.hpp"
#include "tapegrad/data/token_file.hpp"
#include "tapegrad/data/windows.hpp"
#include "tapegrad/train/trainer.hpp"

namespace tapegrad::train {

/// A stream of token ids: in memory (encoded from text), or a stretch of a token file, read as
/// the windows need it, so that a corpus of gigabytes costs no memory of its own.
struct TokenStream {
  std::vector<std::int64_t> ids;
  std::shared_ptr<const data::TokenFile> file;
  std::size_t begin = 0, count = 0;  ///< the stretch of `file`

  std::size_t size() const { return file ? count : ids.size(); }
  /// The windows of T + 1 ids at `starts` (data::windows).
  data::Batch windows(const std::vector<std::size_t>& starts, std::size_t T) const;
};

/// Training batches: B windows at random starts (nanoGPT's torch.randint(len(data) - T)). Under
/// several ranks, every rank draws the step's B * world starts alike from the same generator and
/// takes its own B (rank r: windows r*B .. r*B + B - 1), so the ranks train on one batch of the
/// job, as one rank with B * world would. The generator is the source's position, tracked by the
/// trainer under `name`.
class RandomWindows : public Batches {
 public:
  /// ValueError when the stream holds no window of T + 1 ids, or B or T is 0.
  RandomWindows(TokenStream tokens, std::size_t T, std::size_t B,
                std::shared_ptr<Generator> generator, int rank = 0, int world = 1,
                std::string name = "data");
  data::Batch next() override;
  std::vector<std::pair<std::string, std::shared_ptr<Generator>>> generators() const override {
    return {{name_, generator_}};
  }
  const TokenStream& tokens() const { return tokens_; }

 private:
  TokenStream tokens_;
  std::size_t T_, B_;
  std::shared_ptr<Generator> generator_;
  int rank_, world_;
  std::string name_;
};

/// The fixed validation set: `count` windows at starts drawn once from Generator(seed), scored in
/// batches of B. ValueError when the stream holds no window of T + 1 ids.
Validation fixed_windows(const TokenStream& tokens, std::size_t T, std::size_t count, std::size_t B,
                         std::uint64_t seed);

}  // namespace tapegrad::train
